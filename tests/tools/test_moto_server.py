"""tests/tools/moto_server.py answers every Query exactly as moto alone does: the same pages
of the same items, counts and last keys, on the table and on an index, forwards and back,
with key conditions, filters, projections and limits. Run by e2e
`emulator::the_emulators_partition_read_answers_every_query_as_moto_does` with the tests'
virtualenv; exits 1 on the first difference.

    python tests/tools/test_moto_server.py
"""

import os
import random
import sys

import boto3
from moto import mock_aws

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import moto_server  # noqa: E402

PARTITIONS = 12
ITEMS = 900


def s(value):
    return {"S": value}


def queries():
    """(name, Query parameters without TableName) of every shape the checks use."""
    found = []
    for pk in ["p0", "p3", "p11", "absent"]:
        found += [
            (f"{pk}: whole partition", {"KeyConditionExpression": "pk = :p",
                                         "ExpressionAttributeValues": {":p": s(pk)}}),
            (f"{pk}: begins_with", {"KeyConditionExpression": "pk = :p AND begins_with(sk, :s)",
                                     "ExpressionAttributeValues": {":p": s(pk), ":s": s("1.")}}),
            (f"{pk}: between, backwards", {
                "KeyConditionExpression": "pk = :p AND sk BETWEEN :a AND :b",
                "ExpressionAttributeValues": {":p": s(pk), ":a": s("2"), ":b": s("5")},
                "ScanIndexForward": False}),
            (f"{pk}: greater, limit 7", {
                "KeyConditionExpression": "pk = :p AND sk > :a",
                "ExpressionAttributeValues": {":p": s(pk), ":a": s("3")}, "Limit": 7}),
            (f"{pk}: filter and projection, consistent", {
                "KeyConditionExpression": "pk = :p",
                "FilterExpression": "size_class = :c",
                "ProjectionExpression": "pk, sk, body",
                "ExpressionAttributeValues": {":p": s(pk), ":c": s("big")},
                "ConsistentRead": True, "Limit": 11}),
        ]
    found.append(("on an index", {"IndexName": "by_class",
                                  "KeyConditionExpression": "size_class = :c",
                                  "ExpressionAttributeValues": {":c": s("small")}, "Limit": 13}))
    return found


def answers():
    """Every page of every query, on a fresh emulated table holding the same items."""
    rng = random.Random(43)
    with mock_aws():
        db = boto3.client("dynamodb", region_name="us-east-1")
        db.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                       {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"}
                                  for a in ["pk", "sk", "size_class"]],
            GlobalSecondaryIndexes=[{
                "IndexName": "by_class",
                "KeySchema": [{"AttributeName": "size_class", "KeyType": "HASH"},
                              {"AttributeName": "sk", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"}}],
            BillingMode="PAY_PER_REQUEST",
        )
        for i in range(ITEMS):
            sk = f"{rng.randrange(10)}.{rng.randrange(100)}.{i}"
            db.put_item(TableName="t", Item={
                "pk": s(f"p{rng.randrange(PARTITIONS)}"), "sk": s(sk),
                "size_class": s(rng.choice(["big", "small"])),
                "body": s("x" * rng.randrange(1, 200))})
        pages = {}
        for name, query in queries():
            got, start = [], None
            while True:
                page = db.query(TableName="t", **query,
                                **({"ExclusiveStartKey": start} if start else {}))
                page.pop("ResponseMetadata", None)
                got.append(page)
                start = page.get("LastEvaluatedKey")
                if not start:
                    break
            pages[name] = got
        return pages


def main():
    alone = answers()
    moto_server.install()
    patched = answers()
    for name, _ in queries():
        if alone[name] != patched[name]:
            print(f"{name}: moto answered\n{alone[name]}\nwith the partition read\n{patched[name]}")
            return 1
    items = sum(len(p["Items"]) for pages in alone.values() for p in pages)
    print(f"{len(alone)} queries, {items} items over their pages: the same answers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
