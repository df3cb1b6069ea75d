#!/usr/bin/env python3
"""Lists a bucket with boto3 and downloads every pqbench object (data.enc, manifest.json,
object.v2) under a prefix into a local directory with the same layout, so that pqreader.py
and pqreader2.py can open them. A format-v2 object's `pqbench-v2` user-metadata entry, if
it has one, goes to `object.v2.meta` beside it (its value, as S3 returns it). Proves that
objects written by pqbench are ordinary S3 objects.

Usage: s3_fetch.py --endpoint URL --bucket B --prefix P --out DIR
Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. Prints one JSON line:
{"keys": [...], "bytes": N}.
"""
import argparse
import json
import os
import sys

import boto3
from botocore.config import Config


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--bucket", required=True)
    ap.add_argument("--prefix", default="")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    s3 = boto3.client(
        "s3",
        endpoint_url=a.endpoint,
        region_name=os.environ.get("AWS_REGION", "us-east-1"),
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
    keys, total = [], 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=a.bucket, Prefix=a.prefix):
        for obj in page.get("Contents", []):
            key = obj["Key"]
            if not key.endswith(("/data.enc", "/manifest.json", "/object.v2")):
                continue
            dest = os.path.join(a.out, key)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            s3.download_file(a.bucket, key, dest)
            size = os.path.getsize(dest)
            if size != obj["Size"]:
                sys.exit(f"{key}: listed {obj['Size']} bytes, downloaded {size}")
            if key.endswith("/object.v2"):
                meta = s3.head_object(Bucket=a.bucket, Key=key).get("Metadata", {})
                if "pqbench-v2" in meta:
                    with open(dest + ".meta", "w") as f:
                        f.write(meta["pqbench-v2"])
            keys.append(key)
            total += size
    print(json.dumps({"keys": sorted(keys), "bytes": total}))


if __name__ == "__main__":
    main()
