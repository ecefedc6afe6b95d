#!/usr/bin/env python3
"""Criteo TSV (label, I1..I13, C1..C26) to libffm lines, for peers such as
xLearn (`xlearn_train train.ffm -s 1 -k 8 -v test.ffm -x auc`).

Usage: bench/criteo_to_libffm.py < data.tsv > data.ffm

Field i (1-39) is the i-th column after the label; an empty column gives no
feature. An integer v becomes the token v when v <= 2 and floor(ln(v)^2)
otherwise (the Criteo-winning buckets, as Sampan's parser makes its signs);
a categorical value is its own token. The feature id is a 64-bit FNV-1a hash
of "field:token" modulo 2^22, the value 1.
"""
import math
import sys

BUCKETS = 1 << 22


def fnv1a(text):
    h = 0xcbf29ce484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def token(field, value):
    if field > 13:
        return value
    v = int(value)
    return str(v) if v <= 2 else "b%d" % int(math.log(v) ** 2)


def main():
    out = sys.stdout
    for line in sys.stdin:
        cols = line.rstrip("\n").split("\t")
        feats = [cols[0]]
        for field, value in enumerate(cols[1:40], start=1):
            if value:
                feats.append("%d:%d:1" % (
                    field, fnv1a("%d:%s" % (field, token(field, value))) % BUCKETS))
        out.write(" ".join(feats) + "\n")


if __name__ == "__main__":
    main()
