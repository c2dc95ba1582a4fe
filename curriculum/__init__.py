"""The dynamic database (SQLAlchemy), theorem difficulty, repository ordering and
lifelong-learning metrics."""
