"""The voice pronunciation scoring API as a plain Python object.

``VoiceApi.handle(method, path, *, form=None, files=None, headers=None)``
answers the documented endpoints with an :class:`~learnloop._http.ApiResponse`:

==========================  =====================================================
``POST /api/v1/score``             score against ``target_phrase``
``POST /api/v1/multichoice/score`` ``target_phrase`` repeated: the best candidate
``POST /api/v1/fluency/score``     the score plus the ``assessment`` dictionary
``POST /api/v1/syllables``         syllable structure of ``target_phrase``, no audio
==========================  =====================================================

Credentials: ``X-API-KEY: <key>`` (keys map to applications), or
``Authorization: Bearer <JWT>`` signed RS256 by a registered issuer, with
``iss``, ``aud`` and ``exp`` claims; an API key past its time in
``key_expiry`` is answered 402.  Errors are ``{"errors": [{"status",
"detail"}]}``; ``handle`` never raises for bad input.  Requests are
``multipart/form-data`` (``application/x-www-form-urlencoded`` is read too):
another ``Content-Type``, e.g. a JSON body, is a 400.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from learnloop._http import ApiResponse, check_api_keys, error_response, header, header_problems, resolve_api_key
from learnloop.errors import ValidationError
from learnloop.voice.audio import AUDIO_FORMATS, AudioError, decode_audio
from learnloop.voice.scorer import PronunciationScorer

__all__ = ["MAX_CANDIDATES", "VoiceApi"]

MAX_CANDIDATES: Final = 10
_PREFIX: Final = "/api/v1"
_ROUTES: Final = {
    "/score": "score",
    "/multichoice/score": "multichoice",
    "/fluency/score": "fluency",
    "/syllables": "syllables",
}
_DIALECTS: Final = ("en-us",)
#: the media types a form arrives in (the server parses both into fields and files)
_FORM_TYPES: Final = ("multipart/form-data", "application/x-www-form-urlencoded")

FormValue = str | Sequence[str]


def _now() -> datetime:
    return datetime.now(UTC)


def _error(status: int, *details: str, headers: Mapping[str, str] | None = None) -> ApiResponse:
    return error_response(status, details, shape="errors", headers=headers)


def _content_type_problem(headers: Mapping[str, str] | None) -> str | None:
    """Why a request's ``Content-Type`` is not a form (``None`` when it is, or when absent).

    >>> _content_type_problem({"Content-Type": "multipart/form-data; boundary=x"}) is None
    True
    >>> _content_type_problem({"Content-Type": "application/json"})
    "Content-Type must be multipart/form-data, got 'application/json'"
    """
    content_type = header(headers, "Content-Type")
    if content_type is None or content_type.split(";")[0].strip().lower() in _FORM_TYPES:
        return None
    return f"Content-Type must be multipart/form-data, got {content_type[:100]!r}"


def _argument_problems(form: object, files: object) -> list[str]:
    """What of ``form`` and ``files`` lies outside ``handle``'s type hints (one line per problem)."""
    problems = []
    if form is not None and not isinstance(form, Mapping):
        problems.append(f"form must be a mapping of field names to strings, got {type(form).__name__}")
    elif form:
        for name, value in form.items():
            values = [value] if isinstance(value, (str, bytes)) else value
            if not isinstance(values, (list, tuple)) or not all(isinstance(v, (str, bytes)) for v in values):
                problems.append(f"form field {str(name)[:100]!r} must be a string or a list of strings")
    if files is not None and not isinstance(files, Mapping):
        problems.append(f"files must be a mapping of field names to bytes, got {type(files).__name__}")
    elif files:
        problems += [
            f"file {str(name)[:100]!r} must be bytes, got {type(data).__name__}"
            for name, data in files.items()
            if not isinstance(data, (bytes, bytearray, memoryview))
        ]
    return problems


class VoiceApi:
    """The voice façade.

    ``api_keys`` maps secret keys to application ids; ``jwt_issuers`` maps
    issuer ids to RSA public keys (PEM).  With both ``None`` authentication is
    off.  ``key_expiry`` maps an API key to the aware ``datetime`` from which
    it answers 402 (a naive one is taken as UTC), by ``clock`` (the system's by
    default).  ``scorer`` defaults to a shared :class:`PronunciationScorer`,
    made on first use.

    >>> from datetime import UTC, datetime
    >>> api = VoiceApi(api_keys={"k": "app-1"}, key_expiry={"k": datetime(2000, 1, 1, tzinfo=UTC)})
    >>> api.handle("POST", "/api/v1/syllables", form={"target_phrase": "hi"}, headers={"X-API-KEY": "k"}).body
    {'errors': [{'status': 402, 'detail': 'the API key expired at 2000-01-01T00:00:00+00:00'}]}
    """

    def __init__(
        self,
        scorer: PronunciationScorer | None = None,
        *,
        api_keys: Mapping[str, str] | None = None,
        jwt_issuers: Mapping[str, str | bytes] | None = None,
        jwt_leeway_seconds: int = 30,
        key_expiry: Mapping[str, datetime] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._scorer = scorer
        self.api_keys = check_api_keys(api_keys)
        self.key_expiry = {
            k: (v if v.tzinfo is not None else v.replace(tzinfo=UTC)) for k, v in (key_expiry or {}).items()
        }
        self.clock: Callable[[], datetime] = clock or _now
        self.jwt_issuers = None if jwt_issuers is None else dict(jwt_issuers)
        self.jwt_leeway_seconds = jwt_leeway_seconds

    @property
    def scorer(self) -> PronunciationScorer:
        if self._scorer is None:
            self._scorer = PronunciationScorer()
        return self._scorer

    # -- entry point -----------------------------------------------------------------
    def handle(
        self,
        method: str,
        path: str,
        *,
        form: Mapping[str, FormValue] | None = None,
        files: Mapping[str, bytes] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ApiResponse:
        if not isinstance(method, str) or not isinstance(path, str):
            return _error(400, "the method and the path must be strings")
        clean = path.split("?", 1)[0].rstrip("/")
        route = _ROUTES.get(clean[len(_PREFIX) :]) if clean.startswith(_PREFIX + "/") else None
        if route is None:
            return _error(404, f"no resource at {path!r}")
        if str(method).upper() != "POST":
            return _error(405, f"{method} is not allowed on {clean}; use POST", headers={"Allow": "POST"})
        problems = header_problems(headers)
        if problems:
            return _error(400, *problems)
        who = self.authenticate(headers)
        if who is None:
            return _error(401, "missing, wrong or expired credentials: send X-API-KEY or Authorization: Bearer <JWT>")
        expiry = self._key_expiry(headers)
        if expiry is not None and self.clock() >= expiry:
            return _error(402, f"the API key expired at {expiry.isoformat()}")
        problem = _content_type_problem(headers)
        if problem is not None:  # (its fields were not read: what they lack is not worth listing)
            return _error(400, problem)
        problems = _argument_problems(form, files)
        if problems:
            return _error(400, *problems)
        try:
            return getattr(self, f"_{route}")(form or {}, files or {})  # type: ignore[no-any-return]
        except ValidationError as exc:
            return _error(400, *exc.problems)

    # -- credentials -----------------------------------------------------------------
    def authenticate(self, headers: Mapping[str, str] | None) -> str | None:
        """The application (API key) or ``issuer:audience`` (token) of a request, or ``None``."""
        if self.api_keys is None and self.jwt_issuers is None:
            return "default"
        if self.api_keys is not None and header(headers, "X-API-KEY") is not None:
            return resolve_api_key(self.api_keys, headers)
        auth = header(headers, "Authorization")
        if self.jwt_issuers and auth and auth[:7].lower() == "bearer ":
            return self._verify_token(auth[7:].strip())
        return None

    def _key_expiry(self, headers: Mapping[str, str] | None) -> datetime | None:
        """When the request's API key expires, if it authenticated with one that has an expiry."""
        if self.api_keys is None or not self.key_expiry:
            return None
        key = header(headers, "X-API-KEY")
        return self.key_expiry.get(key) if key is not None else None

    def _verify_token(self, token: str) -> str | None:
        try:
            import jwt
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("JWT client tokens need the 'voice' extra: pip install 'learnloop[voice]'") from exc
        assert self.jwt_issuers is not None
        try:
            unverified = jwt.decode(token, options={"verify_signature": False})
            issuer = unverified.get("iss")
            key = self.jwt_issuers.get(issuer) if isinstance(issuer, str) else None
            if key is None:
                return None
            claims = jwt.decode(
                token,
                key,
                algorithms=["RS256"],
                issuer=issuer,
                leeway=self.jwt_leeway_seconds,
                options={"require": ["iss", "aud", "exp"], "verify_aud": False},
            )
        except (jwt.PyJWTError, ValueError, TypeError):
            return None
        aud = claims.get("aud")
        if isinstance(aud, list):
            aud = aud[0] if aud and all(isinstance(a, str) for a in aud) else None
        if not isinstance(aud, str) or not aud:
            return None
        return f"{issuer}:{aud}"

    # -- form parsing ----------------------------------------------------------------
    @staticmethod
    def _values(form: Mapping[str, FormValue], name: str) -> list[str]:
        raw = form.get(name)
        if raw is None:
            return []
        values = [raw] if isinstance(raw, (str, bytes)) else list(raw)
        out = []
        for v in values:
            out.append(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v))
        return out

    def _single(
        self, form: Mapping[str, FormValue], name: str, problems: list[str], *, required: bool = True
    ) -> str | None:
        values = self._values(form, name)
        if not values or not values[0].strip():
            if required:
                problems.append(f"'{name}' is required")
            return None
        if len(values) > 1:
            problems.append(f"'{name}' must be given once, not {len(values)} times")
            return None
        return values[0]

    def _audio_request(
        self, form: Mapping[str, FormValue], files: Mapping[str, bytes], *, multi: bool
    ) -> tuple[list[str], bytes]:
        problems: list[str] = []
        dialect = self._single(form, "dialect", problems)
        if dialect is not None and dialect.strip().lower() not in _DIALECTS:
            problems.append(f"dialect {dialect!r} is not supported; use 'en-us'")
        self._single(form, "user_id", problems)
        fmt = self._single(form, "audio_format", problems, required=False)
        if fmt is not None and fmt.strip().lower() not in AUDIO_FORMATS:
            problems.append(f"audio_format {fmt!r} is not supported; use wav, mp3 or webm")
        if multi:
            phrases = [p for p in self._values(form, "target_phrase") if p.strip()]
            if not phrases:
                problems.append("'target_phrase' is required (once per candidate)")
            elif len(phrases) > MAX_CANDIDATES:
                problems.append(f"too many candidates: {len(phrases)} > {MAX_CANDIDATES}")
        else:
            one = self._single(form, "target_phrase", problems)
            phrases = [one] if one is not None else []
        for phrase in phrases:  # what the scorer would refuse in a phrase, before any audio is read
            try:
                self.scorer._tokens(phrase)
            except ValidationError as exc:
                problems.extend(exc.problems)
        audio = files.get("audio")
        if audio is None:
            audio_value = self._values(form, "audio")
            audio = audio_value[0].encode() if audio_value else None
        if audio is None or not len(audio):
            problems.append("'audio' file is required")
        elif problems:
            # the request is refused: its audio is decoded now, so that the answer lists its
            # problem too (otherwise the scorer decodes it, once, and refuses it alone)
            try:
                decode_audio(bytes(audio), max_seconds=self.scorer.max_seconds, wideband=True)
            except AudioError as exc:
                problems.extend(exc.problems)
        if problems:
            raise ValidationError(problems)
        assert audio is not None
        return phrases, bytes(audio)

    # -- endpoints -------------------------------------------------------------------
    def _score(self, form: Mapping[str, FormValue], files: Mapping[str, bytes]) -> ApiResponse:
        phrases, audio = self._audio_request(form, files, multi=False)
        return ApiResponse(200, self.scorer.score(audio, phrases[0]).to_dict())

    def _multichoice(self, form: Mapping[str, FormValue], files: Mapping[str, bytes]) -> ApiResponse:
        phrases, audio = self._audio_request(form, files, multi=True)
        return ApiResponse(200, self.scorer.multichoice(audio, phrases).to_dict())

    def _fluency(self, form: Mapping[str, FormValue], files: Mapping[str, bytes]) -> ApiResponse:
        phrases, audio = self._audio_request(form, files, multi=False)
        return ApiResponse(200, self.scorer.score(audio, phrases[0], fluency=True).to_dict())

    def _syllables(self, form: Mapping[str, FormValue], files: Mapping[str, bytes]) -> ApiResponse:
        problems: list[str] = []
        phrase = self._single(form, "target_phrase", problems)
        if problems:
            raise ValidationError(problems)
        assert phrase is not None
        body: dict[str, Any] = self.scorer.syllables(phrase)
        return ApiResponse(200, body)
