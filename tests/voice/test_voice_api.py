"""The voice API contract: shapes, authentication, errors."""

from __future__ import annotations

import io
import subprocess
import sys
import time
import wave
from datetime import UTC, datetime
from typing import Any

import av
import jwt
import numpy as np
import pytest
from conftest import OTHER, PHRASE
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

import learnloop.voice
from learnloop.voice import PronunciationScorer, VoiceApi

KEY = {"X-API-KEY": "secret"}


@pytest.fixture(scope="module")
def rsa_keys() -> tuple[bytes, bytes, bytes]:
    """(private PEM, public PEM, another issuer's private PEM)."""

    def make() -> rsa.RSAPrivateKey:
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)

    key, other = make(), make()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    other_private = other.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return private, public, other_private


@pytest.fixture(scope="module")
def api(scorer: PronunciationScorer, rsa_keys: tuple[bytes, bytes, bytes]) -> VoiceApi:
    return VoiceApi(scorer, api_keys={"secret": "app-1"}, jwt_issuers={"issuer-1": rsa_keys[1]})


def form(phrase: str | list[str] = PHRASE, **extra: str) -> dict[str, str | list[str]]:
    return {"dialect": "en-us", "user_id": "u-1", "target_phrase": phrase, **extra}


def test_exports() -> None:
    assert learnloop.voice.__all__ == sorted(learnloop.voice.__all__)
    assert {"PronunciationScorer", "VoiceApi", "PhraseScore", "AudioError"} <= set(learnloop.voice.__all__)


def test_core_import_does_not_load_heavy_dependencies() -> None:
    code = (
        "import sys, learnloop, learnloop.voice; "
        "print(sorted(m for m in ('pocketsphinx', 'av', 'jwt') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_score_response_shape(api: VoiceApi, clips: dict[str, bytes]) -> None:
    r = api.handle("POST", "/api/v1/score", form=form(), files={"audio": clips["phrase"]}, headers=KEY)
    assert r.status == 200, r.body
    body = r.body
    assert set(body) == {"target_phrase", "overall_score", "word_scores"}
    assert body["target_phrase"] == PHRASE
    assert isinstance(body["overall_score"], int) and 0 <= body["overall_score"] <= 100
    words = body["word_scores"]
    assert [w["word"] for w in words] == PHRASE.split()
    w = words[3]
    assert set(w) == {"word", "is_matched", "boundaries", "indices", "score", "phoneme_scores", "syllable_scores"}
    assert w["indices"] == {"start": PHRASE.index("tomorrow"), "end": len(PHRASE) - 1}
    assert set(w["boundaries"]) == {"start_ms", "end_ms"}
    p = w["phoneme_scores"][0]
    assert set(p) == {"phoneme", "phoneme_ipa", "sounds_like", "sounds_like_ipa", "score"}
    assert (p["phoneme"], p["phoneme_ipa"]) == ("T", "t")
    assert [s["syllable"] for s in w["syllable_scores"]] == ["tuh", "mah", "roh"]
    s = w["syllable_scores"][0]
    assert set(s) == {"syllable", "syllable_ipa", "score", "phoneme_scores"}
    assert set(s["phoneme_scores"][0]) == {
        "phoneme",
        "phoneme_ipa",
        "sounds_like",
        "sounds_like_ipa",
        "score",
        "score_grade",
    }
    assert s["phoneme_scores"][0]["score_grade"] in {"A", "B", "C", "D"}
    r.json()  # serialisable


def test_multichoice_and_fluency(api: VoiceApi, clips: dict[str, bytes]) -> None:
    r = api.handle(
        "POST", "/api/v1/multichoice/score", form=form([OTHER, PHRASE]), files={"audio": clips["phrase"]}, headers=KEY
    )
    assert r.status == 200 and r.body["target_phrase"] == PHRASE
    r = api.handle("POST", "/api/v1/fluency/score", form=form(), files={"audio": clips["slow"]}, headers=KEY)
    assert r.status == 200
    a = r.body["assessment"]
    assert set(a) == {"overall_score", "fluency", "content", "pronunciation"}
    for part in ("fluency", "content", "pronunciation"):
        assert set(a[part]) == {"score", "explanation"}
        assert all(set(e) == {"keyword", "description"} for e in a[part]["explanation"])
    assert "slow" in [e["keyword"] for e in a["fluency"]["explanation"]]


def test_syllables_endpoint(api: VoiceApi) -> None:
    r = api.handle("POST", "/api/v1/syllables", form={"target_phrase": "Hello, banana"}, headers=KEY)
    assert r.status == 200
    words = r.body["word_scores"]
    assert r.body["target_phrase"] == "Hello, banana"
    assert set(words[1]) == {"word", "indices", "phoneme_scores", "syllable_scores"}
    assert words[1]["indices"] == {"start": 7, "end": 12}
    assert [s["syllable"] for s in words[1]["syllable_scores"]] == ["buh", "na", "nuh"]
    assert [s["syllable_ipa"] for s in words[1]["syllable_scores"]] == ["bə", "næ", "nə"]
    assert words[0]["phoneme_scores"][0] == {"phoneme": "HH", "phoneme_ipa": "h"}


def test_a_word_with_accented_letters_is_one_word_pronounced_without_its_accents(api: VoiceApi) -> None:
    phrase = "Naïve café, 你好"
    r = api.handle("POST", "/api/v1/syllables", form={"target_phrase": phrase}, headers=KEY)
    assert r.status == 200
    words = r.body["word_scores"]
    # the other script has no English pronunciation: it is not a word to score
    assert [(w["word"], w["indices"]) for w in words] == [
        ("Naïve", {"start": 0, "end": 4}),
        ("café", {"start": 6, "end": 9}),
    ]
    plain = api.handle("POST", "/api/v1/syllables", form={"target_phrase": "naive cafe"}, headers=KEY)
    assert [w["phoneme_scores"] for w in words] == [w["phoneme_scores"] for w in plain.body["word_scores"]]


def token(private: bytes, **claims: object) -> str:
    payload = {"iss": "issuer-1", "aud": "user-42", "exp": int(time.time()) + 7 * 86400, **claims}
    payload = {k: v for k, v in payload.items() if v is not None}
    return jwt.encode(payload, private, algorithm="RS256")


def test_authentication(api: VoiceApi, rsa_keys: tuple[bytes, bytes, bytes]) -> None:
    private, _, other = rsa_keys
    body = {"target_phrase": "hi"}

    def status(headers: dict[str, str] | None) -> int:
        return api.handle("POST", "/api/v1/syllables", form=body, headers=headers).status

    assert status(KEY) == 200
    assert status({"x-api-key": "secret"}) == 200
    assert status(None) == 401
    assert status({"X-API-KEY": "wrong"}) == 401
    assert status({"Authorization": f"Bearer {token(private)}"}) == 200
    assert status({"Authorization": f"bearer {token(private)}"}) == 200
    assert status({"Authorization": f"Bearer {token(private, exp=int(time.time()) - 3600)}"}) == 401
    assert status({"Authorization": f"Bearer {token(other)}"}) == 401  # wrong signing key
    assert status({"Authorization": f"Bearer {token(private, iss='unknown')}"}) == 401
    assert status({"Authorization": f"Bearer {token(private, aud=None)}"}) == 401
    assert status({"Authorization": f"Bearer {token(private, exp=None)}"}) == 401
    hs = jwt.encode({"iss": "issuer-1", "aud": "u", "exp": int(time.time()) + 60}, "k" * 32, algorithm="HS256")
    assert status({"Authorization": f"Bearer {hs}"}) == 401
    assert status({"Authorization": "Bearer not.a.token"}) == 401
    assert status({"Authorization": "Basic abc"}) == 401
    r = api.handle("POST", "/api/v1/syllables", form=body)
    assert r.body == {"errors": [{"status": 401, "detail": r.body["errors"][0]["detail"]}]}
    assert VoiceApi(api.scorer).handle("POST", "/api/v1/syllables", form=body).status == 200  # auth off


def test_an_expired_api_key_is_402(api: VoiceApi, rsa_keys: tuple[bytes, bytes, bytes]) -> None:
    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    expiry = {"old": datetime(2026, 3, 1, 12, 0, tzinfo=UTC), "later": datetime(2026, 3, 2)}  # naive: UTC
    voice = VoiceApi(
        api.scorer,
        api_keys={"old": "app-1", "later": "app-1"},
        jwt_issuers={"issuer-1": rsa_keys[1]},
        key_expiry=expiry,
        clock=lambda: now,
    )

    def call(headers: dict[str, str]) -> tuple[int, object]:
        r = voice.handle("POST", "/api/v1/syllables", form={"target_phrase": "hi"}, headers=headers)
        return r.status, r.body

    expired = {"errors": [{"status": 402, "detail": "the API key expired at 2026-03-01T12:00:00+00:00"}]}
    assert call({"X-API-KEY": "old"}) == (402, expired)  # from the expiry on
    assert call({"X-API-KEY": "later"})[0] == 200
    now = datetime(2026, 3, 2, tzinfo=UTC)
    assert call({"X-API-KEY": "later"})[0] == 402
    assert call({"X-API-KEY": "wrong"})[0] == 401  # wrong credentials before expiry
    assert call({"Authorization": f"Bearer {token(rsa_keys[0])}"})[0] == 200  # tokens have their own expiry
    # the key is checked before the request: an expired key learns nothing about its fields
    r = voice.handle("POST", "/api/v1/score", form={}, headers={"X-API-KEY": "old"})
    assert r.status == 402
    assert api.handle("POST", "/api/v1/syllables", form={"target_phrase": "hi"}, headers=KEY).status == 200


def test_routing_errors(api: VoiceApi) -> None:
    assert api.handle("POST", "/api/v1/nothing", headers=KEY).status == 404
    assert api.handle("POST", "/api/v0.1/score", headers=KEY).status == 404
    r = api.handle("GET", "/api/v1/score", headers=KEY)
    assert r.status == 405 and r.body["errors"][0]["status"] == 405 and r.headers == {"Allow": "POST"}


@pytest.mark.parametrize(
    ("arguments", "detail"),
    [
        ({"method": None}, "the method and the path must be strings"),
        ({"path": 5}, "the method and the path must be strings"),
        ({"headers": ["x"]}, "headers must be a mapping of names to strings, got list"),
        ({"headers": {"X-API-KEY": 5}}, "header 'X-API-KEY' must be a string, got int"),
        ({"form": ["target_phrase"]}, "form must be a mapping of field names to strings, got list"),
        ({"form": {"target_phrase": 5}}, "form field 'target_phrase' must be a string or a list of strings"),
        ({"form": {"target_phrase": [5]}}, "form field 'target_phrase' must be a string or a list of strings"),
        ({"files": ["audio"]}, "files must be a mapping of field names to bytes, got list"),
        ({"files": {"audio": "RIFF"}}, "file 'audio' must be bytes, got str"),
    ],
)
def test_voice_arguments_outside_the_type_hints_are_400(api: VoiceApi, arguments: dict[str, Any], detail: str) -> None:
    call: dict[str, Any] = {"method": "POST", "path": "/api/v1/score", "form": form(), "headers": KEY, **arguments}
    r = api.handle(call.pop("method"), call.pop("path"), **call)
    assert r.status == 400 and r.body == {"errors": [{"status": 400, "detail": detail}]}


def _flac(samples: np.ndarray) -> bytes:
    buf = io.BytesIO()
    with av.open(buf, mode="w", format="flac") as c:
        s = c.add_stream("flac", rate=16000)
        s.layout = "mono"
        f = av.AudioFrame.from_ndarray(samples.astype(np.int16).reshape(1, -1), format="s16", layout="mono")
        f.sample_rate = 16000
        for p in s.encode(f):
            c.mux(p)
        for p in s.encode(None):
            c.mux(p)
    return buf.getvalue()


def test_bad_requests_are_400(api: VoiceApi, clips: dict[str, bytes]) -> None:
    audio = {"audio": clips["phrase"]}
    cases = [
        (form(), {}),  # no audio
        (form(), {"audio": b""}),
        (form(), {"audio": b"RIFF....WAVEgarbage"}),
        (form(), {"audio": _flac(np.zeros(16000))}),  # unsupported container
        (form(audio_format="ogg"), audio),
        (form(dialect="en-gb"), audio),
        ({"dialect": "en-us", "target_phrase": PHRASE}, audio),  # no user_id
        (form(""), audio),
        (form("!!! ..."), audio),  # no words
        (form("word " * 100), audio),
        (form([PHRASE, OTHER]), audio),  # repeated phrase on /score
    ]
    for fields, files in cases:
        r = api.handle("POST", "/api/v1/score", form=fields, files=files, headers=KEY)
        assert r.status == 400, (fields, r.body)
        assert set(r.body) == {"errors"} and all(e["status"] == 400 and e["detail"] for e in r.body["errors"])
    r = api.handle("POST", "/api/v1/score", form={}, files={}, headers=KEY)
    assert r.status == 400 and len(r.body["errors"]) == 4  # every problem listed at once
    r = api.handle("POST", "/api/v1/multichoice/score", form=form([PHRASE] * 11), files=audio, headers=KEY)
    assert r.status == 400
    assert api.handle("POST", "/api/v1/syllables", form={}, headers=KEY).status == 400


def _wav(seconds: float, rate: int = 16000) -> bytes:
    """A tiny silent WAV file (16-bit mono)."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\0\0" * int(seconds * rate))
    return buf.getvalue()


@pytest.mark.parametrize(
    ("fields", "audio", "details"),
    [
        (
            {"dialect": "en-gb", "target_phrase": "hello"},
            b"RIFF....WAVEgarbage",
            [
                "dialect 'en-gb' is not supported; use 'en-us'",
                "'user_id' is required",
                "audio could not be decoded as wav, mp3 or webm",
            ],
        ),
        (
            form("!!! ..."),
            _wav(0.05),
            ["target_phrase '!!! ...' holds no words", "audio is shorter than 0.1 seconds"],
        ),
        (
            form(audio_format="ogg"),
            _wav(0.5, rate=8000),
            [
                "audio_format 'ogg' is not supported; use wav, mp3 or webm",
                "audio is narrow-band (8000 Hz sample rate, content up to 4.0 kHz); "
                "16 kHz or more is needed to score pronunciation",
            ],
        ),
    ],
)
@pytest.mark.parametrize("path", ["/api/v1/score", "/api/v1/fluency/score", "/api/v1/multichoice/score"])
def test_one_400_lists_the_field_problems_and_the_audio_problem_together(
    api: VoiceApi, path: str, fields: dict[str, str], audio: bytes, details: list[str]
) -> None:
    r = api.handle("POST", path, form=fields, files={"audio": audio}, headers=KEY)
    assert r.status == 400
    assert r.body == {"errors": [{"status": 400, "detail": d} for d in details]}


def test_undecodable_audio_alone_is_its_own_400(api: VoiceApi) -> None:
    r = api.handle("POST", "/api/v1/score", form=form(), files={"audio": b"RIFF....WAVEgarbage"}, headers=KEY)
    assert r.status == 400
    assert r.body == {"errors": [{"status": 400, "detail": "audio could not be decoded as wav, mp3 or webm"}]}


@pytest.mark.parametrize("path", ["/api/v1/score", "/api/v1/multichoice/score", "/api/v1/syllables"])
@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8", "text/plain"])
def test_a_body_that_is_not_a_form_is_400_saying_a_form_is_expected(
    api: VoiceApi, path: str, content_type: str
) -> None:
    # what a server hands over for a JSON body: its headers, no form fields, no files
    r = api.handle("POST", path, headers={**KEY, "Content-Type": content_type})
    detail = f"Content-Type must be multipart/form-data, got {content_type!r}"
    assert r.status == 400 and r.body == {"errors": [{"status": 400, "detail": detail}]}


@pytest.mark.parametrize(
    "content_type", ["multipart/form-data; boundary=xyz", "Multipart/Form-Data", "application/x-www-form-urlencoded"]
)
def test_a_form_content_type_is_accepted(api: VoiceApi, content_type: str) -> None:
    r = api.handle(
        "POST", "/api/v1/syllables", form={"target_phrase": "hi"}, headers={**KEY, "Content-Type": content_type}
    )
    assert r.status == 200, r.body
