"""Readers of learning logs: the 3-line files, CSV and column tables, and what a log turns into."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from learnloop import Engine
from learnloop.datasets import (
    ResponseLog,
    align,
    from_columns,
    read_csv,
    read_datashop,
    read_item_skills,
    read_three_line,
)
from learnloop.errors import ValidationError

DATA = Path(__file__).parents[1] / "data"


def test_three_line_slice_of_assist2009_reads_every_response_in_order() -> None:
    log = read_three_line(DATA / "assist2009_dkvmn_test_head.csv")
    lines = (DATA / "assist2009_dkvmn_test_head.csv").read_text().split("\n")
    counts = [int(lines[k]) for k in range(0, 120, 3)]
    assert log.n_learners == 40 and log.n_responses == sum(counts)
    first_ids = lines[1].strip().strip(",").split(",")
    first_answers = [float(v) for v in lines[2].strip().strip(",").split(",")]
    rows = log.learner == 0
    assert [log.item_ids[i] for i in log.item[rows]] == first_ids
    assert log.correct[rows].tolist() == first_answers
    # no times in the file: made up, strictly increasing within each learner
    assert not log.timed
    assert np.all(np.diff(log.time)[~log.first[1:]] > 0)
    # the ids are skills: each item is its own skill
    assert log.n_items == log.n_skills and np.all(np.diff(log.skill_ptr) == 1)


def test_statics_questions_map_to_their_skills() -> None:
    skills = read_item_skills(DATA / "statics_qid_sid_sname.tsv", item="qid", skill="skillid")
    assert len(skills) == 1223 and len({s for v in skills.values() for s in v}) == 98
    log = read_three_line(DATA / "statics_dkvmn_test_head.csv", item_skills=skills)
    assert log.n_learners == 8
    for i, raw in enumerate(log.item_ids):
        named = [log.skill_ids[s] for s in log.skill_idx[log.skill_ptr[i] : log.skill_ptr[i + 1]]]
        assert named == skills[raw]


def test_malformed_blocks_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("3\n1,2,3\n1,0\n")
    with pytest.raises(ValueError, match="block at non-empty line 1: 3 responses announced, 3 ids and 2 answers"):
        read_three_line(bad)
    bad.write_text("2\n1,2\n1,2\n")
    with pytest.raises(ValueError, match="answers must be 0 or 1"):
        read_three_line(bad)
    bad.write_text("2\n1,2\n")
    with pytest.raises(ValueError, match="not a multiple of 3"):
        read_three_line(bad)


def test_assistments_csv_rows_of_one_multi_skill_answer_become_one_response(tmp_path: Path) -> None:
    path = tmp_path / "skill_builder.csv"
    path.write_text(
        "order_id,user_id,problem_id,skill_id,correct\n"
        "3,u1,p2,s1,0\n"
        "1,u1,p1,s1,1\n"
        "1,u1,p1,s2,1\n"  # the same answer listed for its second skill
        "2,u2,p1,s1,0\n"
        "2,u2,p1,s2,0\n"
        "4,u1,p3,,1\n"  # no skill
        "5,u1,p3,,\n"  # no answer: left out
    )
    log = read_csv(path, learner="user_id", item="problem_id", skill="skill_id", correct="correct", order="order_id")
    assert log.n_responses == 4
    assert [(log.learner_ids[u], log.item_ids[i]) for u, i in zip(log.learner, log.item, strict=True)] == [
        ("u1", "p1"), ("u1", "p2"), ("u1", "p3"), ("u2", "p1"),
    ]  # fmt: skip
    p1 = log.item_ids.index("p1")
    assert [log.skill_ids[s] for s in log.skill_idx[log.skill_ptr[p1] : log.skill_ptr[p1 + 1]]] == ["s1", "s2"]
    rows, skills = log.response_skills()
    assert rows.tolist() == [0, 0, 1, 3, 3]  # one response, two skills: paired, never duplicated as responses


def test_columns_of_a_table_with_times(tmp_path: Path) -> None:
    table = {
        "student": ["b", "a", "a", "b"],
        "question": ["q1", "q1", "q2", "q2"],
        "right": [1, 0, 1, 1],
        "when": ["2024-01-02T10:00:00Z", "2024-01-01T10:00:00Z", "2024-01-01T09:00:00Z", "2024-01-02T10:00:00Z"],
    }
    log = from_columns(table, learner="student", item="question", correct="right", time="when")
    assert log.timed and log.learner_ids == ("b", "a")
    # learner a's answers are put in time order; b's equal times are kept in order, a millisecond apart
    assert [log.item_ids[i] for i in log.item] == ["q1", "q2", "q2", "q1"]
    assert log.time[1] - log.time[0] == pytest.approx(0.001, abs=1e-6)
    stamps = [e["timestamp"] for _, events in log.events() for e in events]
    assert len(set(stamps[:2])) == 2  # distinct keys for the engine


def test_a_log_becomes_a_catalog_and_events_the_engine_takes() -> None:
    log = read_three_line(DATA / "statics_dkvmn_test_head.csv", item_skills=read_item_skills(
        DATA / "statics_qid_sid_sname.tsv"))  # fmt: skip
    items, catalog = log.catalog("statics")
    engine = Engine()
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    posted = 0
    for user, events in log.events("statics"):
        posted += engine.upsert_events(user, events)
    assert posted == log.n_responses  # each response has its own (item, time) key: nothing deduplicated
    status = engine.user_status(log.catalog_learner_ids[0], "statics", [{}])[0]
    assert 0.0 < status.proficiency < 1.0


def test_split_folds_and_align_keep_learners_whole() -> None:
    log = read_three_line(DATA / "assist2009_dkvmn_test_head.csv")
    train, test = log.split(0.25, seed=3)
    assert set(train.present_learners()).isdisjoint(test.present_learners())
    assert train.n_responses + test.n_responses == log.n_responses
    folds = log.folds(4, seed=1)
    assert sorted(np.concatenate([v.present_learners() for _, v in folds]).tolist()) == list(range(40))
    other = read_three_line(DATA / "statics_dkvmn_test_head.csv")
    a, b = align(log, other)
    assert a.item_ids == b.item_ids and a.skill_ids == b.skill_ids
    assert [a.item_ids[i] for i in a.item] == [log.item_ids[i] for i in log.item]
    assert [b.item_ids[i] for i in b.item] == [other.item_ids[i] for i in other.item]


def test_responses_of_one_learner_must_be_contiguous() -> None:
    log = from_columns({"u": ["a", "b"], "i": ["x", "y"], "c": [1, 0]}, learner="u", item="i", correct="c")
    with pytest.raises(ValueError, match="contiguous"):
        ResponseLog(**{**log.__dict__, "learner": np.array([0, 1, 0]), "item": np.array([0, 1, 0]),
                       "correct": np.array([1.0, 0.0, 1.0]), "time": np.array([0.0, 0.0, 1.0])})  # fmt: skip


def test_a_bad_cell_is_named_by_its_column_and_row() -> None:
    table = {"u": ["a"] * 20, "i": [f"q{k}" for k in range(20)], "c": [1, 0] * 8 + [1, "yes", 0, 1]}
    with pytest.raises(ValidationError) as caught:
        from_columns(table, learner="u", item="i", correct="c")
    assert str(caught.value) == "column 'c', row 17: expected 0 or 1 (or a score between), got 'yes'"
    assert isinstance(caught.value, ValueError)  # as before: a ValueError


def test_every_kind_of_bad_cell_is_named_at_once() -> None:
    table = {
        "user": ["a", "a", None, "b", "b", "b"],
        "item": ["q1", "", "q1", "q2", "q3", "q4"],
        "correct": [1, 0, 1, -1, 1, None],  # row 5 has no answer: left out, its cells unread
        "order": [1, 2, 3, "x", 5, "not read"],
        "when": ["2024-01-01T10:00:00", 1.7e9, 1.7e9, 1.7e9, "yesterday", "not read"],
    }
    with pytest.raises(ValidationError) as caught:
        from_columns(table, learner="user", item="item", correct="correct", order="order", time="when")
    assert caught.value.problems == (
        "column 'item', row 1: expected an id, got ''",
        "column 'user', row 2: expected an id, got None",
        "column 'correct', row 3: expected 0 or 1 (or a score between), got -1",
        "column 'order', row 3: expected a number, got 'x'",
        "column 'when', row 4: expected epoch seconds or an ISO 8601 time, got 'yesterday'",
    )


def test_at_most_ten_bad_cells_are_listed() -> None:
    table = {"u": ["a"] * 25, "i": ["q"] * 25, "c": ["?"] * 25}
    with pytest.raises(ValidationError) as caught:
        from_columns(table, learner="u", item="i", correct="c")
    problems = caught.value.problems
    assert len(problems) == 11 and problems[9].startswith("column 'c', row 9:")
    assert problems[10] == "and 15 more bad cells"


def test_a_bad_cell_of_a_csv_file_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text('user_id,problem_id,correct\nu1,p1,1\nu1,"p\n2",0\nu1,p3,maybe\n')
    with pytest.raises(
        ValidationError, match=r"log.csv: column 'correct', row 2 \(line 5\): expected 0 or 1 .*got 'maybe'"
    ):
        read_csv(path, learner="user_id", item="problem_id", correct="correct")


def test_datashop_slice_of_kdd_cup_carries_its_times_to_the_log() -> None:
    path = DATA / "kddcup2010_ct_head.tsv"
    log = read_datashop(path)
    assert log.timed and log.n_learners == 11 and log.n_responses == 11 * 120
    first = path.read_text(encoding="latin-1").split("\n")[1].split("\t")
    assert log.learner_ids[0] == first[1] and log.item_ids[0] == f"{first[3]}/{first[5]}"
    start = datetime.fromisoformat(first[6]).replace(tzinfo=UTC).timestamp()
    assert log.time[0] == start
    assert log.correct[0] == float(first[13])
    # real gaps: within a learner the times increase, some by more than a day
    steps = np.diff(log.time)[~log.first[1:]]
    assert np.all(steps > 0) and (steps > 86400).any()
    # the times survive a split by learner and the events an engine is fed
    train, test = log.split(0.3, seed=0)
    assert train.timed and test.timed and np.isin(test.time, log.time).all()
    _, events = next(iter(test.events()))
    assert events[0]["timestamp"].startswith(datetime.fromtimestamp(test.time[0], UTC).strftime("%Y-%m-%d"))


def test_datashop_step_of_two_components_is_one_response_and_a_missing_column_is_named(tmp_path: Path) -> None:
    head = "Anon Student Id\tProblem Name\tStep Name\tStep Start Time\tCorrect First Attempt\tKC(Default)\n"
    steps = tmp_path / "two.tsv"
    steps.write_text(
        head + "s1\tp\tx\t2006-10-26 09:51:58.0\t1\ta~~b\ns1\tp\ty\t2006-10-27 09:00:00.0\t0\t\n"
        "s1\tq\tz\t\t\ta\n",  # no answer (a test row): left out
        encoding="latin-1",
    )
    log = read_datashop(steps)
    assert log.n_responses == 2 and log.correct.tolist() == [1.0, 0.0]
    assert [log.skill_ids[s] for s in log.skill_idx[log.skill_ptr[0] : log.skill_ptr[1]]] == ["a", "b"]
    assert log.time[1] - log.time[0] == pytest.approx(86400 - 3118)
    bad = tmp_path / "steps.tsv"
    bad.write_text("Anon Student Id\tProblem Name\n1\tp\n", encoding="latin-1")
    with pytest.raises(ValueError, match="Step Name"):
        read_datashop(bad)
