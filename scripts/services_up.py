"""Exit 0 when PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) both answer, 1 otherwise."""

import os
import socket
import sys


def answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def main() -> int:
    if os.environ.get("ARGORA_SKIP_POSTGRES"):
        return 1
    if not (answers("127.0.0.1", 5432) and answers("127.0.0.1", 6379)):
        return 1
    try:
        import psycopg

        psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=postgres", connect_timeout=3).close()
    except Exception as exc:  # noqa: BLE001 - any failure means "not usable"
        print(f"PostgreSQL answers but refuses us: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
