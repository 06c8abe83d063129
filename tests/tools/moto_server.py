"""moto's server (`moto_server`, same arguments), with one change that keeps its answers and
not their cost: a DynamoDB Query on the table itself reads the queried partition, not the
whole table.

moto 5 answers a Query on the table (no index) by listing and sorting every item of the
table, then keeping those of the queried partition (moto/dynamodb/models/table.py: Table.query
calls Table.all_items). A query thus costs the whole table, and a test that publishes N
versions spends time in N squared: the 500-file soak, request costs at 10,000 versions and
bulk publishing of thousands waited on it (tests/src/moto.rs says more). DynamoDB reads only
the partition. Here, while a base-table Query runs on a thread, Table.all_items on that table
returns the items of the queried partition; the Query filters them by partition, sorts them by
sort key and applies its conditions as before. Everything else is moto as installed.

e2e `aws::dynamodb_and_s3_keep_the_storage_contract` and every test of the AWS shape run on it;
tests/tools/test_moto_server.py checks that each Query answers exactly what moto alone answers.
"""

import inspect
import sys
import threading

from moto.dynamodb.models.table import Table
from moto.server import main

_moto_all_items = Table.all_items
_moto_query = Table.query
_query_parameters = inspect.signature(_moto_query)
_running = threading.local()


def _all_items(self):
    """The queried partition's items during a base-table Query on this table, else moto's."""
    query = getattr(_running, "query", None)
    if query is None or query[0] is not self:
        return _moto_all_items(self)
    partition = self.items.get(query[1])
    if partition is None:
        return []
    return list(partition.values()) if self.range_key_attr else [partition]


def _query(self, *args, **kwargs):
    """moto's Query, with a base-table Query's partition noted for `_all_items`."""
    bound = _query_parameters.bind(self, *args, **kwargs)
    hash_key = bound.arguments.get("hash_key")
    if bound.arguments.get("index_name") or hash_key is None:
        return _moto_query(self, *args, **kwargs)
    _running.query = (self, hash_key)
    try:
        return _moto_query(self, *args, **kwargs)
    finally:
        _running.query = None


def install():
    """Puts the partition read in place of moto's whole-table read for base-table Queries."""
    Table.all_items = _all_items
    Table.query = _query


if __name__ == "__main__":
    install()
    main(sys.argv[1:])
