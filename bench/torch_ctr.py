#!/usr/bin/python3
"""A PyTorch reference for Sampan's LR, FM, DeepFM and DCN-v2 (issue 26): the same features,
initialisation and update rules, so that an AUC gap between the two is
Sampan's to explain. A bench peer only: never a dependency of the product.

Usage (Debian's python3-torch; run with /usr/bin/python3):
  bench/torch_ctr.py --data=criteo.tsv[.gz] [--holdout=0.1]
      [--model=fm|lr|deepfm|dcn] [--hidden=400,400,400] [--cross_layers=3]
      [--dim=8] [--lr=0.05] [--batch=1024] [--epochs=1] [--threads=2]
      [--int=buckets|both] [--empty] [--min_count=0] [--dense_lr=0.01]
      [--w_start=1] [--v_start=1000] [--init=0.01] [--seed=1]
      [--style=mirror|idiomatic]
Prints one line: model, AUC, logloss and rows of the held-out tail, training
examples/s (the training loop alone, as `sampan train-local` reports it)
and the BLAS library torch called (libblas.so.3: reference BLAS, or
OpenBLAS where libopenblas0 is installed).

What it mirrors (trainer/data/formats.cc, trainer/model/ctr_model.h,
sparse_table/accessor.cc):
  - Criteo TSV, field f = column f after the label (slots 1-39); an integer
    v is the token s<v> when v <= 2 and b<floor(ln(v)^2)> otherwise
    (--int=buckets), and with --int=both also a dense input
    sign(v) log(1 + |v|) with its own linear term; an empty field gives no
    feature, or with --empty a token of its own; a categorical value is its
    own token. Exact vocabularies: one row per (field, token) of the
    training rows; with --min_count N the tokens seen fewer than N times
    there share one row per field. A token never trained is no feature.
  - The last --holdout of the file's non-empty lines is the test set.
  - logit = b + sum_j w_j [+ 1/2 sum_k ((sum_f v_fk)^2 - sum_f v_fk^2)]
    [+ d . w_d + b_d] [+ MLP(cross^L([e, d]))]; the bias b is a row like
    the others; e is the per-field sums of the rows' v (B x 39*dim), the
    MLP's hidden layers ReLU, DCN-v2's cross layers x' = x0 * (x W + b) + x.
  - Dense: w_d, b_d start at 0; MLP and cross W Glorot-uniform (cross:
    sqrt(6 / 2n)), b 0.
  - Rows: w starts at 0, v uniform in [-init, init]; row-wise Adagrad with
    one squared-gradient sum per block (w, v), grown by the block's mean
    square, starting at --w_start / --v_start; gradients summed over the
    batch (the push of a batch's summed gradients). Dense weights: Adam on
    the per-example mean gradient.
"""
import argparse
import gzip
import math
import os
import sys
import time


def _threads():
    for arg in sys.argv[1:]:
        if arg.startswith("--threads="):
            return arg.split("=", 1)[1]
    return "2"


# OpenBLAS starts a thread per core unless told: the reference gets the
# threads Sampan gets. OPENBLAS_CORETYPE=Haswell (from the caller) holds it
# to AVX2 kernels on an AVX-512 machine, the class Sampan is built for.
os.environ.setdefault("OPENBLAS_NUM_THREADS", _threads())
import torch  # noqa: E402


def tokens(cols, int_mode, empty):
    """The (field, token) features and dense inputs of one row."""
    feats, dense = [], []
    for f in range(1, 40):
        value = cols[f] if f < len(cols) else ""
        if f <= 13:
            if value == "":
                if empty:
                    feats.append((f, ""))
                dense.append(0.0)
                continue
            v = int(value)
            dense.append(math.log1p(v) if v >= 0 else -math.log1p(-v))
            feats.append((f, "s%d" % v if v <= 2 else
                          "b%d" % int(math.floor(math.log(v) ** 2))))
        elif value != "" or empty:
            feats.append((f, value))
    return feats, dense


def load(path, holdout, int_mode, empty):
    opener = gzip.open if path.endswith(".gz") else open
    rows = []
    with opener(path, "rt") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            cols = line.split("\t")
            feats, dense = tokens(cols, int_mode, empty)
            rows.append((float(cols[0]), feats, dense))
    keep = int((1 - holdout) * len(rows))
    return rows[:keep], rows[keep:]


def index(rows, vocab):
    """Flat feature ids, per-row offsets, labels, dense inputs and each
    feature's field (slot - 1)."""
    ids, fields, offsets, labels, dense = [], [], [0], [], []
    for label, feats, d in rows:
        for ft in feats:
            i = vocab.get(ft)
            if i is None:
                i = vocab.get((ft[0], None))  # the field's rare row
            if i is not None:
                ids.append(i)
                fields.append(ft[0] - 1)
        offsets.append(len(ids))
        labels.append(label)
        dense.append(d)
    return (torch.tensor(ids, dtype=torch.long),
            torch.tensor(offsets, dtype=torch.long),
            torch.tensor(labels), torch.tensor(dense),
            torch.tensor(fields, dtype=torch.long))


def auc_logloss(p, y):
    order = torch.argsort(p)
    ranks = torch.empty_like(p)
    ranks[order] = torch.arange(1, len(p) + 1, dtype=p.dtype)
    # Mean ranks for ties.
    sp, inv = torch.unique(p, return_inverse=True)
    sums = torch.zeros(len(sp), dtype=p.dtype).index_add_(0, inv, ranks)
    counts = torch.zeros(len(sp), dtype=p.dtype).index_add_(
        0, inv, torch.ones_like(p))
    ranks = (sums / counts)[inv]
    pos = y.sum()
    neg = len(y) - pos
    auc = (ranks[y > 0.5].sum() - pos * (pos + 1) / 2) / (pos * neg)
    q = p.clamp(1e-7, 1 - 1e-7)
    ll = -(y * q.log() + (1 - y) * (1 - q).log()).mean()
    return float(auc), float(ll)


FIELDS = 39


class Model:
    def __init__(self, n, a):
        g = torch.Generator().manual_seed(a.seed)
        self.kind = a.model
        self.fm = a.model in ("fm", "deepfm")
        self.deep = a.model in ("deepfm", "dcn")
        self.emb = a.model != "lr"
        self.dim = a.dim
        self.w = torch.zeros(n + 1)  # row n: the bias
        self.gw = torch.full((n + 1,), a.w_start)
        if self.emb:
            self.v = (torch.rand(n + 1, a.dim, generator=g) * 2 - 1) * a.init
            self.gv = torch.full((n + 1,), a.v_start)
        self.dense = a.int == "both"
        params = []
        if self.dense:
            self.wd = torch.zeros(13, requires_grad=True)
            self.bd = torch.zeros(1, requires_grad=True)
            params += [self.wd, self.bd]
        self.cross, self.mlp = [], []
        if self.deep:
            width = FIELDS * a.dim + (13 if self.dense else 0)

            def glorot(i, o, limit):
                W = ((torch.rand(i, o, generator=g) * 2 - 1) *
                     limit).requires_grad_(True)
                return W, torch.zeros(o, requires_grad=True)

            # ctr_model.cc: Glorot-uniform W (cross layers: sqrt(6 / 2n)),
            # zero b.
            if self.kind == "dcn":
                for _ in range(a.cross_layers):
                    self.cross.append(glorot(width, width,
                                             math.sqrt(6 / (2 * width))))
            sizes = [width] + a.hidden + [1]
            for i, o in zip(sizes[:-1], sizes[1:]):
                self.mlp.append(glorot(i, o, math.sqrt(6 / (i + o))))
            for W, b in self.cross + self.mlp:
                params += [W, b]
        self.params = params
        self.adam = (torch.optim.Adam(params, lr=a.dense_lr)
                     if params else None)
        self.bias = n
        self.lr = a.lr

    def logits(self, rows, seg, fields, w_feat, w_bias, v_feat, d):
        out = torch.zeros(rows).index_add_(0, seg, w_feat) + w_bias
        if self.emb:
            # e: the per-field sums of the rows' v (B x fields*dim).
            e = torch.zeros(rows * FIELDS, self.dim).index_add_(
                0, seg * FIELDS + fields, v_feat).view(rows, FIELDS,
                                                        self.dim)
        if self.fm:
            s = e.sum(1)
            out = out + 0.5 * (s * s - (e * e).sum(1)).sum(1)
        if self.dense:
            out = out + d @ self.wd + self.bd
        if self.deep:
            x0 = e.reshape(rows, -1)
            if self.dense:
                x0 = torch.cat([x0, d], 1)
            x = x0
            for W, b in self.cross:
                x = x0 * (x @ W + b) + x
            for k, (W, b) in enumerate(self.mlp):
                x = x @ W + b
                if k + 1 < len(self.mlp):
                    x = torch.relu(x)
            out = out + x[:, 0]
        return out

    def step(self, ids, offsets, y, d, fields):
        rows = len(y)
        seg = torch.repeat_interleave(torch.arange(rows),
                                      offsets[1:] - offsets[:-1])
        # The batch's rows once each (a push sums each key's gradients).
        uniq, inv = torch.unique(ids, return_inverse=True)
        rows_w = torch.cat([uniq, torch.tensor([self.bias])])
        w = self.w[rows_w].clone().requires_grad_(True)
        v = self.v[uniq].clone().requires_grad_(True) if self.emb else None
        z = self.logits(rows, seg, fields, w[inv], w[-1],
                        v[inv] if self.emb else None, d)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            z, y, reduction="sum")
        if self.adam:
            self.adam.zero_grad()
        loss.backward()
        with torch.no_grad():
            gw = w.grad
            self.gw[rows_w] += gw * gw
            self.w[rows_w] -= self.lr * gw / self.gw[rows_w].sqrt()
            if self.emb:
                gv = v.grad
                self.gv[uniq] += (gv * gv).mean(1)
                self.v[uniq] -= self.lr * gv / self.gv[uniq].sqrt()[:, None]
            # Dense: the per-example mean.
            for p in self.params:
                p.grad /= rows
        if self.adam:
            self.adam.step()
        return float(loss)

    @torch.no_grad()
    def predict(self, ids, offsets, d, fields):
        rows = len(offsets) - 1
        seg = torch.repeat_interleave(torch.arange(rows),
                                      offsets[1:] - offsets[:-1])
        return torch.sigmoid(self.logits(rows, seg, fields, self.w[ids],
                                         self.w[self.bias],
                                         self.v[ids] if self.emb else None,
                                         d))


class IdiomaticFm:
    """LR or FM as a PyTorch user writes it (--style=idiomatic): nn.Embedding
    tables with sparse gradients over a fixed 39 fields (a missing feature is
    the padding row), autograd through the whole model, and torch.optim's
    own Adagrad (per-element sums, started at --w_start / --v_start) and
    Adam. Same features, initialisation and rates as the mirror above, which
    hand-writes the row-wise update; this one shows what PyTorch's stock
    parts cost."""

    def __init__(self, n, a):
        g = torch.Generator().manual_seed(a.seed)
        self.fm = a.model == "fm"
        self.pad = n + 1  # rows 0..n-1 features, n the bias, n+1 padding
        self.w = torch.nn.Embedding(n + 2, 1, sparse=True,
                                    padding_idx=self.pad)
        torch.nn.init.zeros_(self.w.weight)
        groups = [{"params": [self.w.weight],
                   "initial_accumulator_value": a.w_start}]
        if self.fm:
            self.v = torch.nn.Embedding(n + 2, a.dim, sparse=True,
                                        padding_idx=self.pad)
            with torch.no_grad():
                self.v.weight.copy_((torch.rand(n + 2, a.dim, generator=g) *
                                     2 - 1) * a.init)
                self.v.weight[self.pad].zero_()
            groups.append({"params": [self.v.weight],
                           "initial_accumulator_value": a.v_start})
        self.rows_opt = torch.optim.Adagrad(groups, lr=a.lr)
        # torch 1.13's Adagrad starts every sum at the constructor's
        # initial_accumulator_value, whatever the group says.
        for group in groups:
            self.rows_opt.state[group["params"][0]]["sum"].fill_(
                group["initial_accumulator_value"])
        self.dense = a.int == "both"
        self.adam = None
        if self.dense:
            self.lin = torch.nn.Linear(13, 1)
            torch.nn.init.zeros_(self.lin.weight)
            torch.nn.init.zeros_(self.lin.bias)
            self.adam = torch.optim.Adam(self.lin.parameters(),
                                         lr=a.dense_lr)
        self.bias = n

    def fixed(self, ids, offsets, fields):
        """B x 39 ids, the padding row where a field has no feature."""
        rows = len(offsets) - 1
        seg = torch.repeat_interleave(torch.arange(rows),
                                      offsets[1:] - offsets[:-1])
        x = torch.full((rows, FIELDS), self.pad, dtype=torch.long)
        x[seg, fields] = ids
        return x

    def logits(self, x, d):
        bias = self.w(torch.full((len(x), 1), self.bias,
                                 dtype=torch.long))[:, 0, 0]
        out = self.w(x).sum((1, 2)) + bias
        if self.fm:
            e = self.v(x)
            s = e.sum(1)
            out = out + 0.5 * (s * s - (e * e).sum(1)).sum(1)
        if self.dense:
            out = out + self.lin(d)[:, 0]
        return out

    def step(self, ids, offsets, y, d, fields):
        x = self.fixed(ids, offsets, fields)
        self.rows_opt.zero_grad()
        if self.adam:
            self.adam.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            self.logits(x, d), y, reduction="sum")
        loss.backward()
        self.rows_opt.step()
        if self.adam:
            for p in self.lin.parameters():
                p.grad /= len(y)  # dense: the per-example mean
            self.adam.step()
        return float(loss)

    @torch.no_grad()
    def predict(self, ids, offsets, d, fields):
        return torch.sigmoid(self.logits(self.fixed(ids, offsets, fields), d))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--holdout", type=float, default=0.1)
    p.add_argument("--model", choices=["lr", "fm", "deepfm", "dcn"],
                   default="fm")
    p.add_argument("--hidden", default="400,400,400")
    p.add_argument("--cross_layers", type=int, default=3)
    p.add_argument("--dim", type=int, default=8)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--int", choices=["buckets", "both"], default="buckets")
    p.add_argument("--empty", action="store_true")
    p.add_argument("--min_count", type=int, default=0)
    p.add_argument("--dense_lr", type=float, default=0.01)
    p.add_argument("--w_start", type=float, default=1.0)
    p.add_argument("--v_start", type=float, default=1000.0)
    p.add_argument("--init", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--style", choices=["mirror", "idiomatic"],
                   default="mirror")
    a = p.parse_args()
    a.hidden = [int(h) for h in a.hidden.split(",") if h]
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    train, test = load(a.data, a.holdout, a.int, a.empty)
    counts = {}
    for _, feats, _ in train:
        for ft in feats:
            counts[ft] = counts.get(ft, 0) + 1
    vocab = {}
    for ft, c in counts.items():
        key = ft if c >= a.min_count else (ft[0], None)
        if key not in vocab:
            vocab[key] = len(vocab)
    tr = index(train, vocab)
    te = index(test, vocab)
    if a.style == "idiomatic" and a.model not in ("lr", "fm"):
        p.error("--style=idiomatic: lr or fm")
    m = (IdiomaticFm if a.style == "idiomatic" else Model)(len(vocab), a)
    n = len(train)
    start = time.time()
    for _ in range(a.epochs):
        for b in range(0, n, a.batch):
            e = min(n, b + a.batch)
            lo, hi = int(tr[1][b]), int(tr[1][e])
            m.step(tr[0][lo:hi], tr[1][b:e + 1] - lo, tr[2][b:e], tr[3][b:e],
                   tr[4][lo:hi])
    seconds = time.time() - start
    prob = m.predict(te[0], te[1], te[3], te[4])
    auc, ll = auc_logloss(prob.double(), te[2].double())
    # torch's build says "generic" for Debian's: it calls libblas.so.3,
    # whichever implementation the system's alternatives point that at.
    blas = "unknown"
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "blas" in line and ".so" in line:
                blas = line.split()[-1]
                break
    print("torch %s model=%s style=%s auc=%.4f logloss=%.4f test_rows=%d "
          "examples_per_second=%.0f rows=%d threads=%d blas=%s coretype=%s" %
          (torch.__version__, a.model, a.style, auc, ll, len(test),
           n * a.epochs / seconds, len(vocab), a.threads, blas,
           os.environ.get("OPENBLAS_CORETYPE", "auto")))


if __name__ == "__main__":
    sys.exit(main())
