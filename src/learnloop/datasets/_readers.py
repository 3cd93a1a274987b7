"""Readers of learning logs: the 3-line sequence format, CSV files and column tables."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from learnloop._types import FloatArray
from learnloop.datasets._log import ResponseLog
from learnloop.errors import ValidationError

__all__ = ["from_columns", "read_csv", "read_datashop", "read_item_skills", "read_three_line"]

#: made-up times start here, one minute apart, when a log has none
ORIGIN = datetime(2020, 1, 1, tzinfo=UTC).timestamp()
STEP_SECONDS = 60.0


def _split(line: str) -> list[str]:
    return [part.strip() for part in line.strip().strip(",").split(",") if part.strip() != ""]


def read_three_line(
    path: str | Path,
    *,
    item_skills: Mapping[str, Sequence[str]] | None = None,
    learner_prefix: str | None = None,
) -> ResponseLog:
    """A log in the 3-line format of the DKT and DKVMN benchmark files.

    Each learner takes three lines: the number of responses, the comma-separated
    item (or skill) ids, the comma-separated 0/1 answers. Learners are named
    ``{learner_prefix}{k}`` by their order in the file (prefix: the file's stem
    and ``-``). ``item_skills`` maps item ids to skill ids (e.g.
    :func:`read_item_skills` of STATICS' ``qid_sid`` file); without it each id
    is its own skill, as when the file's ids are skills. The file has no times:
    responses are given times one minute apart, in order.

    Raises ValueError naming the line of any malformed block.
    """
    path = Path(path)
    prefix = f"{path.stem}-" if learner_prefix is None else learner_prefix
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if len(lines) % 3:
        raise ValueError(f"{path}: {len(lines)} non-empty lines, not a multiple of 3")
    learners: list[str] = []
    items: list[str] = []
    answers: list[float] = []
    owner: list[int] = []
    for k in range(0, len(lines), 3):
        where = f"{path}: block at non-empty line {k + 1}"
        try:
            n = int(lines[k].strip().strip(","))
            ids = _split(lines[k + 1])
            marks = [float(v) for v in _split(lines[k + 2])]
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if not n == len(ids) == len(marks):
            raise ValueError(f"{where}: {n} responses announced, {len(ids)} ids and {len(marks)} answers given")
        if any(m not in (0.0, 1.0) for m in marks):
            raise ValueError(f"{where}: answers must be 0 or 1")
        owner.extend([len(learners)] * n)
        learners.append(f"{prefix}{k // 3}")
        items.extend(ids)
        answers.extend(marks)
    return _build(np.asarray(owner, dtype=np.intp), learners, items, np.asarray(answers), None, item_skills)


def read_item_skills(
    path: str | Path, *, item: str | int = 0, skill: str | int = 1, sep: str = "\t", header: bool = True
) -> dict[str, list[str]]:
    """Item → skills from a two-column file (e.g. STATICS' ``STATICS_qid_sid_sname``);
    ``item``/``skill`` name the columns (by header name or position). An item on
    several rows has several skills."""
    out: dict[str, list[str]] = {}
    with Path(path).open(encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter=sep)
        head = next(rows) if header else []
        at = [head.index(c) if isinstance(c, str) else c for c in (item, skill)]
        for row in rows:
            if row and len(row) > max(at):
                skills = out.setdefault(row[at[0]].strip(), [])
                if row[at[1]].strip() not in skills:
                    skills.append(row[at[1]].strip())
    return out


def read_csv(
    path: str | Path,
    *,
    learner: str,
    item: str,
    correct: str,
    skill: str | None = None,
    order: str | None = None,
    time: str | None = None,
    sep: str = ",",
    encoding: str = "utf-8",
) -> ResponseLog:
    """A log from a CSV file with named columns (ASSISTments' ``skill_builder_data.csv``:
    ``learner="user_id", item="problem_id", skill="skill_id", correct="correct",
    order="order_id"``, ``encoding="latin-1"``). See :func:`from_columns`; a bad cell is
    named by its column, its row (counted from 0, the header left out) and its line in the file."""
    wanted = [c for c in (learner, item, correct, skill, order, time) if c is not None]
    columns: dict[str, list[str]] = {c: [] for c in wanted}
    lines: list[int] = []
    with Path(path).open(encoding=encoding, newline="") as handle:
        reader = csv.DictReader(handle, delimiter=sep)
        missing = [c for c in wanted if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{path}: no column {', '.join(map(repr, missing))} (columns: {reader.fieldnames})")
        for row in reader:
            lines.append(reader.line_num)
            for c in wanted:
                columns[c].append(row[c])
    return _from_columns(
        columns,
        learner=learner,
        item=item,
        correct=correct,
        skill=skill,
        order=order,
        time=time,
        where=lambda r: f"row {r} (line {lines[r]})",
        source=f"{path}: ",
    )


def read_datashop(
    path: str | Path,
    *,
    kc: str = "KC(Default)",
    time: str = "Step Start Time",
    encoding: str = "latin-1",
) -> ResponseLog:
    """A step-level log in the tab-separated export of the PSLC DataShop, as the KDD Cup 2010 files
    (``algebra_2006_2007_train.txt``, ...) publish it: one row per step a student took, the item being
    the step of its problem (``Problem Name`` and ``Step Name``), the answer ``Correct First
    Attempt``, the skills the ``kc`` column's knowledge components (several joined by ``~~``), the
    time ``time`` (``Step Start Time``; a step without one takes its ``First Transaction Time``).
    Rows without an answer (the challenge's test rows) are left out; see :func:`from_columns` for the
    rest. Raises ValueError naming a missing column.
    """
    wanted = ["Anon Student Id", "Problem Name", "Step Name", "Correct First Attempt", kc, time]
    columns: dict[str, list[str]] = {"learner": [], "item": [], "correct": [], "skill": [], "time": []}
    with Path(path).open(encoding=encoding, newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        missing = [c for c in wanted if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{path}: no column {', '.join(map(repr, missing))} (columns: {reader.fieldnames})")
        fallback = "First Transaction Time" if "First Transaction Time" in (reader.fieldnames or ()) else time
        for row in reader:
            moment = (row[time] or row[fallback] or "").strip()
            item = f"{row['Problem Name']}/{row['Step Name']}"
            for skill in (row[kc] or "").split("~~") or [""]:  # one row per skill: merged into one response
                columns["learner"].append(row["Anon Student Id"])
                columns["item"].append(item)
                columns["correct"].append(row["Correct First Attempt"])
                columns["skill"].append(skill.strip())
                columns["time"].append(moment)
    return from_columns(columns, learner="learner", item="item", correct="correct", skill="skill", time="time")


def from_columns(
    table: Any,
    *,
    learner: str,
    item: str,
    correct: str,
    skill: str | None = None,
    order: str | None = None,
    time: str | None = None,
) -> ResponseLog:
    """A log from a table of named columns: a pandas or polars DataFrame, a dict of
    sequences, anything whose ``table[name]`` gives a column.

    Rows are ordered by learner (first appearance), then by ``time`` (epoch seconds
    or ISO 8601) or ``order``, else as given. Rows of one learner sharing an
    ``order`` value (or a time, without ``order``) and an item are one response
    whose item has every skill named on them (ASSISTments lists a multi-skill
    problem once per skill); an empty skill cell means none. ``correct`` is read
    as a number: 1 (or more) is right, 0 wrong; fractional values are kept as
    scores; a row with an empty answer is left out.

    Raises :class:`~learnloop.errors.ValidationError` (a ValueError) naming the column
    and the row (its position in the table, from 0) of each bad cell of a row with an
    answer (the first ten): an answer that is not a number of at least 0, an empty
    learner or item, an ``order`` that is not a number, a ``time`` that is neither epoch
    seconds nor ISO 8601; e.g. ``column 'correct', row 17: expected 0 or 1 (or a score
    between), got 'yes'``.
    """
    return _from_columns(
        table,
        learner=learner,
        item=item,
        correct=correct,
        skill=skill,
        order=order,
        time=time,
        where=lambda r: f"row {r}",
        source="",
    )


#: bad cells named in one error, at most
MAX_PROBLEMS = 10


def _from_columns(
    table: Any,
    *,
    learner: str,
    item: str,
    correct: str,
    skill: str | None,
    order: str | None,
    time: str | None,
    where: Callable[[int], str],
    source: str,
) -> ResponseLog:
    learner_cells = _column(table, learner)
    item_cells = _column(table, item)
    raw_correct = _column(table, correct)
    n = len(learner_cells)
    skills = [str(v) if v is not None else "" for v in _column(table, skill)] if skill else [""] * n
    time_cells = _column(table, time) if time is not None else None
    order_cells = _column(table, order) if order is not None else None
    given = [c for c in (item_cells, raw_correct, skills, time_cells, order_cells) if c is not None]
    if any(len(c) != n for c in given):
        raise ValueError("the columns differ in length")
    problems: list[str] = []
    more = 0

    def bad(column: str, r: int, detail: str) -> None:
        nonlocal more
        if len(problems) < MAX_PROBLEMS:
            problems.append(f"{source}column {column!r}, {where(r)}: {detail}")
        else:
            more += 1

    answered: list[int] = []
    answers: dict[int, float] = {}
    keys: dict[int, float] = {}
    when: dict[int, float] = {}
    for r in range(n):
        value = raw_correct[r]
        if _is_empty(value):
            continue  # a row without an answer is left out
        answered.append(r)
        score = _number(value)
        if score is None or not score >= 0.0:
            bad(correct, r, f"expected 0 or 1 (or a score between), got {value!r}")
        else:
            answers[r] = min(1.0, score)
        for column, cells in ((learner, learner_cells), (item, item_cells)):
            if _is_empty(cells[r]):
                bad(column, r, f"expected an id, got {cells[r]!r}")
        keys[r] = float(r)
        if time is not None and time_cells is not None:
            moment = _seconds(time_cells[r])
            if moment is None:
                bad(time, r, f"expected epoch seconds or an ISO 8601 time, got {time_cells[r]!r}")
            else:
                when[r] = keys[r] = moment
        if order is not None and order_cells is not None:
            number = _number(order_cells[r])
            if number is None or not math.isfinite(number):
                bad(order, r, f"expected a number, got {order_cells[r]!r}")
            else:
                keys[r] = number
    if problems:
        if more:
            problems.append(f"and {more} more bad cells")
        raise ValidationError(problems)
    learners = [str(v) for v in learner_cells]
    items = [str(v) for v in item_cells]
    first_seen: dict[str, int] = {}
    for name in learners:
        first_seen.setdefault(name, len(first_seen))
    # one response per (learner, key, item); skills gathered over its rows
    merged: dict[tuple[int, float, str], int] = {}
    rows: list[int] = []
    item_skills: dict[str, list[str]] = {}
    for r in answered:
        key = (first_seen[learners[r]], keys[r], items[r])
        sk = item_skills.setdefault(items[r], [])
        if skills[r].strip() and skills[r].strip() not in sk and not _is_nan(skills[r]):
            sk.append(skills[r].strip())
        if key not in merged:
            merged[key] = r
            rows.append(r)
    rows.sort(key=lambda r: (first_seen[learners[r]], keys[r]))
    owner = np.asarray([first_seen[learners[r]] for r in rows], dtype=np.intp)
    scores = np.asarray([answers[r] for r in rows], dtype=np.float64)
    times = None if time_cells is None else np.asarray([when[r] for r in rows])
    names = list(first_seen)
    return _build(owner, names, [items[r] for r in rows], scores, times, item_skills if skill else None)


def _is_empty(value: Any) -> bool:
    """No value: None, blank text or NaN."""
    return value is None or (isinstance(value, str) and not value.strip()) or _is_nan(value)


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _column(table: Any, name: str | None) -> list[Any]:
    if name is None:
        return []
    try:
        column = table[name]
    except (KeyError, IndexError, TypeError):
        raise ValueError(f"no column {name!r}") from None
    to_list = getattr(column, "to_list", None) or getattr(column, "tolist", None)
    return list(to_list() if callable(to_list) else column)


def _seconds(value: Any) -> float | None:
    """Epoch seconds of a time cell (a number, an ISO 8601 text or a datetime); None if it is none of them."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    number = _number(value)
    if number is not None:
        return number if math.isfinite(number) else None
    try:
        moment = datetime.fromisoformat(str(value).strip())
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _is_nan(value: Any) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return False


def _build(
    owner: np.ndarray,
    learner_ids: Sequence[str],
    raw_items: Sequence[str],
    correct: np.ndarray,
    times: FloatArray | None,
    item_skills: Mapping[str, Sequence[str]] | None,
) -> ResponseLog:
    item_index: dict[str, int] = {}
    item = np.fromiter(
        (item_index.setdefault(i, len(item_index)) for i in raw_items), dtype=np.intp, count=len(raw_items)
    )
    item_ids = tuple(item_index)
    skill_index: dict[str, int] = {}
    ptr = [0]
    idx: list[int] = []
    for raw in item_ids:
        named = [raw] if item_skills is None else list(item_skills.get(raw, ()))
        idx.extend(skill_index.setdefault(str(s), len(skill_index)) for s in named)
        ptr.append(len(idx))
    n = owner.size
    if times is None:
        first = np.ones(n, dtype=bool)
        first[1:] = owner[1:] != owner[:-1]
        starts = np.flatnonzero(first)
        rank = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
        times = (ORIGIN + STEP_SECONDS * rank).astype(np.float64)
        timed = False
    else:
        # equal times within a learner are spread by a millisecond, keeping the order (no two share a key)
        times = _strictly_increasing(owner, np.asarray(times, dtype=np.float64))
        timed = True
    return ResponseLog(
        learner=owner,
        item=item,
        correct=correct,
        time=times,
        learner_ids=tuple(learner_ids),
        item_ids=item_ids,
        skill_ids=tuple(skill_index),
        skill_ptr=np.asarray(ptr, dtype=np.intp),
        skill_idx=np.asarray(idx, dtype=np.intp),
        timed=timed,
    )


def _strictly_increasing(owner: np.ndarray, times: FloatArray) -> FloatArray:
    """Times on whole milliseconds (the engine's resolution), each learner's strictly increasing."""
    ms = np.round(times * 1000.0).astype(np.int64)
    for k in range(1, ms.size):
        if owner[k] == owner[k - 1] and ms[k] <= ms[k - 1]:
            ms[k] = ms[k - 1] + 1
    return ms / 1000.0
