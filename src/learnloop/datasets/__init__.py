"""Public learning logs as learnloop data: responses, items, a catalog and event streams.

Readers take a path (nothing is downloaded): :func:`read_three_line` for the
DKT / DKVMN benchmark files, :func:`read_csv` for ASSISTments-style CSV files,
:func:`read_datashop` for step-level DataShop exports (the KDD Cup 2010 files, with
their times), :func:`from_columns` for a DataFrame or any table of named columns
(``time=``: event times, which the evaluation replays). Each gives
a :class:`ResponseLog`, which splits by learner and turns into items, a catalog
(one topic per skill) and event streams for :class:`learnloop.Engine`.

>>> log = from_columns({"user": ["a", "a", "b"], "item": ["q1", "q2", "q1"], "correct": [1, 0, 1]},
...                    learner="user", item="item", correct="correct")
>>> log
ResponseLog(3 responses of 2 learners, 2 items, 2 skills, ordered)
>>> items, catalog = log.catalog("demo")
>>> [t.topic_id for t in catalog.topics]
['sq1', 'sq2']
"""

from learnloop.datasets._log import ResponseLog, align, identifiers
from learnloop.datasets._readers import from_columns, read_csv, read_datashop, read_item_skills, read_three_line

__all__ = [
    "ResponseLog",
    "align",
    "from_columns",
    "identifiers",
    "read_csv",
    "read_datashop",
    "read_item_skills",
    "read_three_line",
]
