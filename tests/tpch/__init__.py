"""The 22 TPC-H queries (written from the specification, validation parameters), one SQL
file each in ``queries/``."""

from pathlib import Path

QUERIES_DIR = Path(__file__).parent / "queries"
QUERY_NAMES = [f"q{i:02d}" for i in range(1, 23)]


def query(name: str) -> str:
    return (QUERIES_DIR / f"{name}.sql").read_text()
