"""The v1 content endpoints: assets and views, stored beside the items and catalogs they become.

An asset's v1 document is kept in the engine's document namespace ``v1.assets``
and its item in the item database, in one transaction (``engine.atomic()``); a
view's document goes to the namespace ``v1.views`` (whose write order orders the
view list) and its catalog beside it. The façade reaches the store only through
:meth:`Engine.documents <learnloop.engine.Engine.documents>` and
:meth:`~learnloop.engine.Engine.put_documents`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from learnloop._http import ApiResponse, query_list
from learnloop.api._v1_limits import V1Limits
from learnloop.api._v1_mapping import (
    asset_to_item,
    internal_id,
    is_under,
    path_segments,
    view_to_catalog,
)
from learnloop.api._v1_models import (
    AssetBody,
    BulkAssets,
    Fail,
    ViewBody,
    bounded_int,
    dump,
    metadata_problems,
    parse,
    single,
)
from learnloop.errors import NotFoundError, ValidationError

if TYPE_CHECKING:
    from learnloop.engine import Engine

__all__ = ["ASSETS", "USERS", "V1Content", "VIEWS"]

#: the document namespaces of the v1 façade (see :meth:`~learnloop.engine.Engine.documents`)
ASSETS = "v1.assets"
VIEWS = "v1.views"
USERS = "v1.users"


class V1Content:
    """The asset and view endpoints of :class:`~learnloop.api.V1Api` (which owns one)."""

    def __init__(self, engine: Engine, limits: V1Limits) -> None:
        self.engine = engine
        self.limits = limits

    # -- stored documents ---------------------------------------------------------------------------
    def _asset_docs(self, app: str, asset_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The stored asset documents of ``asset_ids`` that exist, by original id."""
        found = self.engine.documents(ASSETS, [internal_id(a) for a in asset_ids], app=app)
        out = {}
        for asset_id in asset_ids:
            doc = found.get(internal_id(asset_id))
            if isinstance(doc, dict) and doc.get("id") == asset_id:
                out[asset_id] = doc
        return out

    def view_doc(self, app: str, view_id: str) -> dict[str, Any]:
        doc = self.engine.documents(VIEWS, [internal_id(view_id)], app=app).get(internal_id(view_id))
        if doc is None or doc.get("id") != view_id:
            raise NotFoundError("view", view_id)
        return doc

    # -- assets ----------------------------------------------------------------------------------
    def _asset_problems(self, asset: AssetBody, where: str) -> list[str]:
        problems = []
        limit = self.limits.description_chars
        if asset.description is not None and len(asset.description) > limit:
            problems.append(f"'{where}description' has {len(asset.description)} characters; at most {limit}")
        problems += metadata_problems(asset.metadata, where=f"{where}metadata", variability_cap=self.limits.variability)
        return problems

    def _write_assets(self, app: str, docs: list[dict[str, Any]]) -> None:
        items = [asset_to_item(d) for d in docs]
        with self.engine.atomic():
            self.engine.upsert_items(items, app=app)
            self.engine.put_documents(ASSETS, [(i.item_id, d) for i, d in zip(items, docs, strict=True)], app=app)

    def put_asset(self, app: str, asset_id: str, raw: bytes) -> ApiResponse:
        body = parse(AssetBody, raw)
        problems = self._asset_problems(body, "")
        if body.id is not None and body.id != asset_id:
            problems.insert(0, f"'id' must be the asset id of the path, {asset_id!r}, got {body.id!r}")
        if problems:
            raise ValidationError(problems)
        self._write_assets(app, [{"id": asset_id, **{k: v for k, v in dump(body).items() if k != "id"}}])
        return ApiResponse(200, None)

    def put_assets(self, app: str, raw: bytes) -> ApiResponse:
        body = parse(BulkAssets, raw)
        limit = self.limits.bulk_assets
        if len(body.assets) > limit:
            raise ValidationError(f"'assets' holds {len(body.assets)} assets; at most {limit} per call")
        problems = []
        counts: dict[str, int] = {}
        for i, asset in enumerate(body.assets):
            counts[asset.id] = counts.get(asset.id, 0) + 1
            problems += self._asset_problems(asset, f"assets[{i}].")
        problems += [f"asset '{a}' appears {n} times in one request" for a, n in counts.items() if n > 1]
        if problems:
            raise ValidationError(problems)
        self._write_assets(app, [dump(a) for a in body.assets])
        return ApiResponse(200, None)

    def get_asset(self, app: str, asset_id: str) -> ApiResponse:
        doc = self._asset_docs(app, [asset_id]).get(asset_id)
        if doc is None:
            raise NotFoundError("asset", asset_id)
        return ApiResponse(200, doc)

    def delete_asset(self, app: str, asset_id: str) -> ApiResponse:
        if not self._delete(app, [asset_id]):
            raise NotFoundError("asset", asset_id)
        return ApiResponse(200, None)

    def _delete(self, app: str, asset_ids: list[str]) -> list[str]:
        with self.engine.atomic():
            present = list(self._asset_docs(app, asset_ids))
            keys = [internal_id(a) for a in present]
            self.engine.delete_documents(ASSETS, keys, app=app)
            self.engine.delete_items(keys, app=app)
        return present

    def _asset_ids(self, params: dict[str, list[str]], limit: int) -> list[str]:
        ids = query_list(params, "asset_ids")
        if ids is None:
            raise Fail(400, "query parameter 'asset_ids' is required")
        if len(ids) > limit:
            raise Fail(400, f"'asset_ids' names {len(ids)} assets; at most {limit} per call")
        return list(dict.fromkeys(ids))

    def get_assets(self, app: str, params: dict[str, list[str]]) -> ApiResponse:
        ids = self._asset_ids(params, self.limits.multi_get_assets)
        return ApiResponse(200, {"assets": list(self._asset_docs(app, ids).values())})

    def delete_assets(self, app: str, params: dict[str, list[str]]) -> ApiResponse:
        ids = self._asset_ids(params, self.limits.bulk_delete_assets)
        return ApiResponse(200, {"asset_ids": self._delete(app, ids)})

    # -- views ----------------------------------------------------------------------------------
    def put_view(self, app: str, view_id: str, raw: bytes) -> ApiResponse:
        body = parse(ViewBody, raw)
        problems: list[str] = []
        if body.id is not None and body.id != view_id:
            problems.append(f"'id' must be the view id of the path, {view_id!r}, got {body.id!r}")
        limit = self.limits.view_assets
        if not body.assets:
            problems.append("'assets' is empty; a view holds at least one asset")
        if len(body.assets) > limit:
            problems.append(f"'assets' holds {len(body.assets)} assets; at most {limit} per view")
        ids = [a.asset_id for a in body.assets]
        counts: dict[str, int] = {}
        for asset_id in ids:
            counts[asset_id] = counts.get(asset_id, 0) + 1
        problems += [f"asset '{a}' appears {n} times in the view" for a, n in counts.items() if n > 1]
        if body.path is not None:
            root = path_segments(body.path)
            problems += [
                f"'assets[{i}].path' {a.path!r} is not under the view path {body.path!r}"
                for i, a in enumerate(body.assets)
                if not is_under(path_segments(a.path), root)
            ]
        existing = self._asset_docs(app, list(counts))
        problems += [f"'assets[{i}].asset_id': asset '{a}' not found" for i, a in enumerate(ids) if a not in existing]
        try:
            before = self.view_doc(app, view_id)
        except NotFoundError:
            before = None
        if before is not None:
            current = [a["asset_id"] for a in before["assets"]]
            still = self._asset_docs(app, current)
            missing = [a for a in current if a in still and a not in counts]
            if missing:
                listed = ", ".join(repr(a) for a in missing)
                problems.append(f"an update must list every asset of the view; missing {listed}")
        if problems:
            raise ValidationError(problems)
        doc = {"id": view_id, **dump(body), "ordered": bool(body.ordered)}
        catalog = view_to_catalog(doc)
        with self.engine.atomic():
            self.engine.upsert_catalog(catalog, app=app)
            self.engine.put_documents(VIEWS, [(internal_id(view_id), doc)], app=app)
        return ApiResponse(200, None)

    def get_view(self, app: str, view_id: str) -> ApiResponse:
        doc = self.view_doc(app, view_id)
        assets = self._asset_docs(app, [a["asset_id"] for a in doc["assets"]])
        out = []
        for entry in doc["assets"]:
            asset = assets.get(entry["asset_id"])
            if asset is None:
                continue
            fields = {
                "asset_id": entry["asset_id"],
                **{k: v for k, v in asset.items() if k != "id" and k != "metadata"},
            }
            fields["path"] = entry["path"]
            if "attributes" in entry:
                fields["attributes"] = entry["attributes"]
            out.append(fields)
        return ApiResponse(200, {**doc, "assets": out})

    def delete_view(self, app: str, view_id: str) -> ApiResponse:
        self.view_doc(app, view_id)
        with self.engine.atomic():
            self.engine.delete_documents(VIEWS, [internal_id(view_id)], app=app)
            try:
                self.engine.delete_catalog(internal_id(view_id), app=app)
            except NotFoundError:
                pass
        return ApiResponse(200, None)

    def get_views(self, app: str, params: dict[str, list[str]]) -> ApiResponse:
        last = single(params, "last_view_id", required=False)
        text = single(params, "limit", required=False)
        maximum = self.limits.views_per_page
        limit = maximum
        if text is not None:
            parsed = bounded_int(text, 1, maximum)
            if parsed is None:
                raise Fail(
                    400,
                    f"query parameter 'limit' must be an integer from 1 to {maximum}, got {text[:50]!r}",
                )
            limit = parsed
        entries = [doc for _, doc in self.engine.scan_documents(VIEWS, app=app, order="seq")]
        if last is not None:
            ids = [doc.get("id") for doc in entries]
            if last not in ids:
                raise NotFoundError("view", last)
            entries = entries[ids.index(last) + 1 :]
        views = [{k: v for k, v in doc.items() if k != "assets"} for doc in entries[:limit]]
        return ApiResponse(200, {"views": views})
