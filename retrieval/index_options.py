"""The options of a premise index (:mod:`retrieval.index`), in a module of their own so that
the command line and the configs that carry them import no faiss."""

from __future__ import annotations

from dataclasses import dataclass

# The recall@10 against exact search that an approximate index must measure, by default.
RECALL_TARGET = 0.99


@dataclass(frozen=True, slots=True)
class IndexOptions:
    """The shape of the index and the recall it must reach. The approximate index's first
    try (``probes``, ``rerank``) is a start: the calibration scans more until the recall it
    measures meets ``recall_target``, and the index is exact when it cannot."""

    # Corpora of at most this many premises x dimensions are searched exactly: one masked
    # scan of them takes about 3 ms on one thread (50k premises of MiniLM's 384 dimensions,
    # 14k of ByT5's 1472), and needs no training.
    exact_work: int = 20_000_000
    # Recall@10 against exact search that the approximate index must measure on its
    # calibration queries (retrieval/calibration.py); it is exact where it cannot.
    recall_target: float = RECALL_TARGET
    # Calibration queries: enough that 0.99 is told from 0.98 (1280 neighbours), few enough
    # that calibrating costs a few seconds beside the minutes an index of that size takes.
    calibration_queries: int = 128
    # Goal states of stored theorems calibrated on beside them, where the index is built for
    # proving or evaluation (retrieval/goal_queries.py): the queries it will serve are goals,
    # which may lie elsewhere in the embedding space than premises do.
    calibration_goals: int = 128
    # The first served queries of an approximate index that are all also answered exactly
    # (retrieval/served.py): its recall on what it serves is least known then, and a few
    # hundred tell 0.99 from 0.98.
    served_checks_first: int = 256
    # Afterwards, the share of search time that the exact checks of sampled queries may take.
    served_check_share: float = 0.05
    # Checks at the current setting before their recall may call for the ladder: fewer would
    # raise an index on the chance misses of a handful of queries.
    served_min_checks: int = 32
    # Checked queries kept (the newest) to run the ladder on, and over which the served recall
    # is told.
    served_pool: int = 256
    # The ladder run on served queries stops where they miss this share of the misses the
    # target allows (0.995 for 0.99): a setting that just meets the target on the queries it
    # was chosen on falls short of it on the next ones about half the time.
    served_margin: float = 0.5
    # IVF lists: about this many times sqrt(N), rounded to a power of two (1024 at 200k).
    lists_per_sqrt: float = 2.0
    # Lists scanned per query at retrieval.scorers.REFERENCE_DENSITY or denser (sparser masks scan more), at
    # first; the calibration doubles it while neighbours are missed in lists not scanned.
    probes: int = 64
    # Fast-scan candidates per result re-scored with the float16 vectors, at first; the
    # calibration doubles it while neighbours are missed among the lists scanned.
    rerank: int = 8
    # Past this many candidates per result the re-scoring costs what an exact scan does.
    max_rerank: int = 128
    # Dimensions per 4-bit PQ sub-quantizer (d/(2 x this) bytes per premise in the lists):
    # fewer scan slower and order the candidates better.
    code_width: int = 4
    # Training points per IVF list (faiss wants at least 39) and the seed of the sampling
    # and of the calibration queries.
    train_per_list: int = 40
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.recall_target <= 1.0:
            raise ValueError(f"a recall target is between 0 and 1, got {self.recall_target}")
        if self.calibration_queries < 1:
            raise ValueError(f"the calibration needs a query at least, got {self.calibration_queries}")
        if not 0.0 <= self.served_check_share <= 1.0:
            raise ValueError(f"a share of search time is between 0 and 1, got {self.served_check_share}")
        if not 0.0 <= self.served_margin <= 1.0:
            raise ValueError(f"a share of the misses allowed is between 0 and 1, got {self.served_margin}")
        if not 1 <= self.served_min_checks <= self.served_pool:
            raise ValueError(
                f"the served checks need 1 to served_pool ({self.served_pool}) checks, got {self.served_min_checks}"
            )
