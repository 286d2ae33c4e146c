#!/usr/bin/env python3
"""Train ngxllm-tiny from scratch: tokenizer, data, model, saved folder.

  python3 train.py --out ../ngxllm-tiny --steps 3000

Steps: generate conversations (gen_data.py), render them with the chat
template (chatfmt.py), train the BPE tokenizer on rendered text, tokenize
(prompt masked, assistant completion trained), train a Qwen3ForCausalLM in
bf16 autocast with AdamW and a cosine schedule, then save bf16 safetensors
shards with their index, config, generation config and tokenizer files.
Everything is seeded; data order depends only on --seed.
"""
import argparse
import json
import math
import multiprocessing as mp
import os
import random
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import build_tokenizer  # noqa: E402
import chatfmt  # noqa: E402
import gen_data  # noqa: E402

MAX_POS = 4096  # --max-pos
MODEL_SHAPE = dict(hidden_size=384, intermediate_size=768, num_hidden_layers=8,
                   num_attention_heads=6, num_key_value_heads=2, head_dim=64)


def _segments_chunk(job):
    split, start, n, seed, opts = job
    return [(chatfmt.segments(conv), conv["meta"]["kind"])
            for conv in gen_data.generate(split, n, seed, start, **opts)]


_WORKER_TOK = None


def _init_worker(tok_path):
    global _WORKER_TOK
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one thread per worker process
    from tokenizers import Tokenizer
    _WORKER_TOK = Tokenizer.from_file(tok_path)


def _examples_chunk(job):
    """Conversations start..start+n-1 generated, cut and tokenized in a worker process; ids as
    uint16 arrays (vocab < 65536) with a trained flag per token, so little crosses the pipe."""
    import numpy as np
    split, start, n, seed, opts, max_len, call_w, refusal_w, name_w, decision_w, first_turn = job
    convs = [(chatfmt.segments(conv), conv["meta"]["kind"])
             for conv in gen_data.generate(split, n, seed, start, **opts)]
    convs = cut_first_turn(convs, first_turn, random.Random(seed * 1000003 + start))
    examples, dropped = encode_convs(_WORKER_TOK, convs, max_len, call_w, refusal_w, name_w, decision_w)
    return [(np.asarray(ids, dtype=np.uint16), np.asarray([t != -100 for t in lab], dtype=np.bool_), spans)
            for ids, lab, spans in examples], dropped


class StreamedData:
    """Training data made while the GPU trains: worker processes generate and tokenize chunks
    of conversations in order (pool.imap), the loop batches each chunk that has arrived
    (length-sorted within the chunk, batches shuffled) and, once every chunk is in and used,
    goes over all of them again (a new epoch).  Data order depends on --seed and on how fast
    chunks arrive relative to the steps, so a rerun sees the same data in a close order."""

    def __init__(self, tok_path, split, n, seed, procs, opts, max_len, call_w, refusal_w, name_w=1.0,
                 decision_w=1.0, first_turn=0.0, chunk=500):
        import threading
        self.examples, self.dropped, self.arrived, self.done, self.n_in = [], 0, [], False, 0
        self.error = None
        self.lock = threading.Lock()
        jobs = [(split, s, min(chunk, n - s), seed, opts, max_len, call_w, refusal_w, name_w, decision_w,
                 first_turn) for s in range(0, n, chunk)]
        self.n_jobs = len(jobs)
        self.pool = mp.get_context("fork").Pool(procs, initializer=_init_worker, initargs=(tok_path,))
        self.it = self.pool.imap(_examples_chunk, jobs)
        self.thread = threading.Thread(target=self._collect, daemon=True)
        self.thread.start()

    def _collect(self):
        try:
            for ex, dropped in self.it:
                with self.lock:
                    self.arrived.append(ex)
                    self.dropped += dropped
                    self.n_in += 1
        except Exception as e:  # a worker's failure stops training, it must not starve it
            self.error = e
        finally:
            self.done = True

    def take(self, min_chunks=1):
        """Examples of the chunks arrived since the last call (waits for min_chunks; with
        min_chunks=0 returns at once, maybe nothing)."""
        while True:
            if self.error is not None:
                raise RuntimeError("data worker failed: %r" % (self.error,))
            with self.lock:
                if len(self.arrived) >= max(1, min_chunks) or self.done or min_chunks == 0:
                    new, self.arrived = self.arrived, []
                    break
            time.sleep(0.05)
        base = len(self.examples)
        for ex in new:
            self.examples.extend(ex)
        return list(range(base, len(self.examples)))

    def close(self):
        self.pool.terminate()


def make_segments(split, n, seed, procs, **opts):
    """Conversations cut into pieces, made by procs processes; opts go to gen_data.generate."""
    chunk = 2000
    jobs = [(split, s, min(chunk, n - s), seed, opts) for s in range(0, n, chunk)]
    with mp.Pool(procs) as pool:
        parts = pool.map(_segments_chunk, jobs)
    return [c for part in parts for c in part]


def cut_first_turn(convs, share, rng):
    """A share of the conversations ends after its first trained turn (the call, refusal or
    answer that reads the tool list): the results, the answer to them and later turns go, so
    a batch of the same tokens holds more decisions between offered tools (fifth session)."""
    if share <= 0:
        return convs
    out = []
    for conv, kind in convs:
        if rng.random() < share:
            k = next((i for i, (_, trained) in enumerate(conv) if trained), len(conv) - 1)
            conv = conv[:k + 1]
        out.append((conv, kind))
    return out


def save_checkpoint(model, tok, out, path, step):
    """The weights as they are now (bf16, the shipped layout) with the tokenizer and configs
    of out, written beside and renamed into path, so a reader never sees half a folder: a long
    run on a lent machine that may be taken back leaves its latest weights behind."""
    import copy
    import shutil
    import torch
    tmp = path + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    m = copy.deepcopy(model).to(torch.bfloat16)
    m.config.torch_dtype = "bfloat16"
    m.save_pretrained(tmp, max_shard_size="12MB")
    del m
    write_generation_config(tmp, tok)
    for fn in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(out, fn), os.path.join(tmp, fn))
    fix_config(tmp, quiet=True)
    with open(os.path.join(tmp, "checkpoint.json"), "w") as f:
        json.dump({"step": step, "time": time.time()}, f)
    shutil.rmtree(path, ignore_errors=True)
    os.rename(tmp, path)


def call_spans(text, offsets, base, w, name_w=1.0):
    """Token index ranges [a, b) (offset by base) of the <tool_call>...</tool_call> blocks of a
    trained piece, found from each token's character offsets, each with its weight w; with
    name_w != 1 the tokens of the called name follow with weight w * name_w (later spans win):
    choosing the name is the step that reads the tool list."""
    spans, pos = [], 0
    while True:
        s = text.find("<tool_call>", pos)
        if s < 0:
            return spans
        e = text.find("</tool_call>", s)
        e = len(text) if e < 0 else e + len("</tool_call>")
        toks = [i for i, (a, _) in enumerate(offsets) if s <= a < e]
        if toks:
            spans.append((base + toks[0], base + toks[-1] + 1, w))
        n0 = text.find('"name": "', s, e)
        if name_w != 1.0 and n0 >= 0:
            n0 += len('"name": "')
            n1 = text.find('"', n0, e)
            # the name's tokens and the token that closes it (the model must also stop there)
            ntoks = [i for i, (a, _) in enumerate(offsets) if n0 <= a <= max(n0, n1)]
            if ntoks:
                spans.append((base + ntoks[0], base + ntoks[-1] + 1, w * name_w))
        pos = e


CANDIDATE_VERDICT = re.compile(r"[,;] ((?:and|but) it (?:fits|does not)|it (?:fits|does not fit))")


def decision_span(text, offsets, base, w):
    """The one token where a trained turn's answer begins (after its reasoning, if any):
    with thinking off it is where the model decides between <tool_call> and words, so
    with w != 1 that token weighs w (a span after the others: it wins).  Among the ~100
    trained tokens of a turn it is the only one that says call or refuse, and unweighted
    the models learnt a prior per thinking mode instead (third session's notes)."""
    spans = []
    i = text.find("</think>")
    # candidate-first reasoning (lex_train.THINK_*_CAND) decides in the words after the name
    m = CANDIDATE_VERDICT.search(text, 0, max(i, 0))
    if m:
        toks = [t for t, (a, _) in enumerate(offsets) if m.start(1) <= a < m.end(1)]
        if toks:
            spans.append((base + toks[0], base + toks[-1] + 1, w))
    c0 = 0 if i < 0 else i + len("</think>")
    while c0 < len(text) and text[c0].isspace():
        c0 += 1
    for t, (a, _) in enumerate(offsets):
        if a >= c0:
            return spans + [(base + t, base + t + 1, w)]
    return spans


def encode_convs(tok, convs, max_len, call_w=1.0, refusal_w=1.0, name_w=1.0, decision_w=1.0):
    """Token ids and a trained-or-not flag per token; each piece is tokenized on its own,
    as a server tokenizes the prompt and then appends what the model generates.
    convs holds (pieces, kind) pairs.  Each example also lists weighted token ranges: its
    trained tool calls (call_w) and the whole trained turn of a refusal (refusal_w)."""
    flat = [text for conv, _ in convs for text, _ in conv]
    enc = tok.encode_batch(flat, add_special_tokens=False)
    examples, dropped, k = [], 0, 0
    for conv, kind in convs:
        ids, mask, spans = [], [], []
        for text, trained in conv:
            piece = enc[k].ids
            if trained and kind == "refusal":
                spans.append((len(ids), len(ids) + len(piece), refusal_w))
            elif trained:
                spans += call_spans(text, enc[k].offsets, len(ids), call_w, name_w)
            if trained and decision_w != 1.0:
                spans += decision_span(text, enc[k].offsets, len(ids), decision_w)
            k += 1
            ids += piece
            mask += [trained] * len(piece)
        if len(ids) > max_len:
            dropped += 1
            continue
        examples.append((ids, [t if m else -100 for t, m in zip(ids, mask)], spans))
    return examples, dropped


def make_batches(examples, batch_tokens, rng, idxs=None):
    """Length-sorted batches under a padded-token budget, in shuffled order (of idxs, or all)."""
    idxs = range(len(examples)) if idxs is None else idxs
    order = sorted(idxs, key=lambda i: (len(examples[i][0]), i))
    batches, cur, cur_max = [], [], 0
    for i in order:
        L = len(examples[i][0])
        if cur and max(cur_max, L) * (len(cur) + 1) > batch_tokens:
            batches.append(cur)
            cur, cur_max = [], 0
        cur.append(i)
        cur_max = max(cur_max, L)
    if cur:
        batches.append(cur)
    rng.shuffle(batches)
    return batches


def grow_depth(model, n_layers):
    """The same model with n_layers decoder layers: each new layer is a copy of the layer
    before it with its output projections (o_proj, down_proj) zeroed, so it adds nothing to
    the residual stream at first and the grown model computes exactly what the small one did."""
    import copy
    import torch
    old = list(model.model.layers)
    n_old = len(old)
    if n_layers <= n_old:
        return model
    # spread the new layers evenly: after original layer i when its share comes up
    extra, layers, added = n_layers - n_old, [], 0
    for i, layer in enumerate(old):
        layers.append(layer)
        want = round((i + 1) * extra / n_old)
        while added < want:
            new = copy.deepcopy(layer)
            with torch.no_grad():
                new.self_attn.o_proj.weight.zero_()
                new.mlp.down_proj.weight.zero_()
            layers.append(new)
            added += 1
    for idx, layer in enumerate(layers):
        layer.self_attn.layer_idx = idx
    model.model.layers = torch.nn.ModuleList(layers)
    model.config.num_hidden_layers = n_layers
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = ["full_attention"] * n_layers
    return model


def model_config(vocab_size, tok):
    from transformers import Qwen3Config
    eot, im_end = tok.token_to_id("<|endoftext|>"), tok.token_to_id("<|im_end|>")
    import inspect
    params = inspect.signature(Qwen3Config.__init__).parameters
    rope = ({"rope_parameters": {"rope_type": "default", "rope_theta": 100000.0}}
            if "rope_parameters" in params else {"rope_theta": 100000.0})
    return Qwen3Config(vocab_size=vocab_size, max_position_embeddings=MAX_POS,
                       rms_norm_eps=1e-6, **rope, hidden_act="silu",
                       tie_word_embeddings=True, attention_bias=False, attention_dropout=0.0,
                       use_sliding_window=False, initializer_range=0.02,
                       bos_token_id=eot, eos_token_id=im_end, pad_token_id=eot,
                       **MODEL_SHAPE)


def write_generation_config(out, tok):
    eot, im_end = tok.token_to_id("<|endoftext|>"), tok.token_to_id("<|im_end|>")
    cfg = {"bos_token_id": eot, "eos_token_id": [im_end, eot], "pad_token_id": eot,
           "do_sample": True, "temperature": 0.3, "top_k": 20, "top_p": 0.9}
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")


def fix_config(out, quiet=False):
    """Keep the classic keys (torch_dtype, rope_theta) beside newer ones so any reader finds them."""
    path = os.path.join(out, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg["torch_dtype"] = "bfloat16"
    rp = cfg.get("rope_parameters") or {}
    cfg.setdefault("rope_theta", rp.get("rope_theta", 100000.0))
    cfg.setdefault("rope_scaling", None)
    cfg["architectures"] = ["Qwen3ForCausalLM"]
    cfg["model_type"] = "qwen3"
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    if not quiet:
        print(json.dumps(cfg, sort_keys=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "ngxllm-tiny"))
    ap.add_argument("--n-train", type=int, default=120000, help="conversations")
    ap.add_argument("--n-tok", type=int, default=30000, help="conversations for the tokenizer")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch-tokens", type=int, default=65536)
    ap.add_argument("--max-len", type=int, default=2048)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=150)
    ap.add_argument("--max-seconds", type=float, default=0, help="safety stop of the loop")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--summary", default="train_summary.json")
    ap.add_argument("--tokenizer", help="reuse this tokenizer.json (its tokenizer_config.json "
                    "beside it is copied too) instead of training one")
    ap.add_argument("--call-weight", type=float, default=1.0,
                    help="loss weight of the tokens inside trained <tool_call> blocks")
    ap.add_argument("--name-weight", type=float, default=1.0,
                    help="extra factor on the tokens of a trained call's function name (x --call-weight)")
    ap.add_argument("--decision-weight", type=float, default=1.0,
                    help="loss weight of the first token of each trained answer (after its reasoning): "
                         "call or words")
    ap.add_argument("--refusal-weight", type=float, default=None,
                    help="loss weight of trained refusal turns (default: --call-weight)")
    gen_data.add_data_args(ap)
    ap.add_argument("--init", help="model folder to start from instead of random weights")
    ap.add_argument("--grow-layers", type=int, default=0,
                    help="with --init: grow to this many layers (new layers start as identities)")
    ap.add_argument("--max-pos", type=int, default=4096, help="max_position_embeddings of the config")
    ap.add_argument("--procs", type=int, default=max(1, min(16, os.cpu_count() or 1)))
    ap.add_argument("--replay", action="store_true",
                    help="with --stream: when no new chunk has arrived, train on examples already made "
                    "instead of waiting for the workers")
    ap.add_argument("--first-turn", type=float, default=0.0,
                    help="with --stream: share of conversations cut after their first trained turn")
    ap.add_argument("--save-every", type=float, default=0,
                    help="seconds between checkpoints of the weights into --checkpoint (0: none)")
    ap.add_argument("--checkpoint", help="folder the latest checkpoint is written to (whole model folder)")
    ap.add_argument("--max-seconds-file",
                    help="a file that may be written while training runs with a new --max-seconds "
                    "(seconds of loop from the start): the schedule is refitted to it from the pace "
                    "of the last 200 steps (a lent machine whose time counts differently than planned)")
    ap.add_argument("--stream", action="store_true",
                    help="make the data in worker processes while training (needs --tokenizer)")
    a = ap.parse_args()

    import torch
    from transformers import Qwen3ForCausalLM
    global MAX_POS
    MAX_POS = a.max_pos
    t0 = time.time()
    random.seed(a.seed)
    torch.manual_seed(a.seed)
    torch.cuda.manual_seed_all(a.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    dev = "cuda"

    if a.tokenizer:
        # reuse a tokenizer byte for byte: the server's tests and templates depend on it
        import shutil
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(a.tokenizer)
        os.makedirs(a.out, exist_ok=True)
        for fn in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(os.path.join(os.path.dirname(os.path.abspath(a.tokenizer)), fn),
                            os.path.join(a.out, fn))
        with open(os.path.join(a.out, "tokenizer_config.json"), encoding="utf-8") as f:
            if json.load(f)["chat_template"] != chatfmt.template_source():
                sys.exit("tokenizer_config.json's chat_template differs from chat_template.jinja")
        print("tokenizer: reused %s, vocab %d" % (a.tokenizer, tok.get_vocab_size()), flush=True)
    else:
        # tokenizer, trained on full renders of its own conversations (seed a.seed + 1)
        tok_convs = gen_data.generate("train", a.n_tok, a.seed + 1, 0, invented=a.invented,
                                      refusal=a.refusal)
        texts = [chatfmt.render(c["messages"], c["tools"], False, c["enable_thinking"]) for c in tok_convs]
        tok = build_tokenizer.train(texts)
        build_tokenizer.save(tok, a.out)
        print("tokenizer: vocab %d, %.1fs" % (tok.get_vocab_size(), time.time() - t0), flush=True)

    if a.refusal_weight is None:
        a.refusal_weight = a.call_weight
    stream = None
    if a.stream:
        # made while training runs: the GPU starts after the first chunks instead of waiting
        # for all of the data (about a minute of a ten-minute call)
        if not a.tokenizer:
            sys.exit("--stream needs --tokenizer")
        stream = StreamedData(a.tokenizer, "train", a.n_train, a.seed, a.procs,
                              gen_data.data_opts(a), a.max_len, a.call_weight, a.refusal_weight, a.name_weight,
                              a.decision_weight, a.first_turn)
        examples = stream.examples
        first = stream.take(min_chunks=min(16, stream.n_jobs))
        print("data: streamed, first %d examples after %.1fs" % (len(first), time.time() - t0), flush=True)
    else:
        convs = make_segments("train", a.n_train, a.seed, a.procs, **gen_data.data_opts(a))
        examples, dropped = encode_convs(tok, convs, a.max_len, a.call_weight, a.refusal_weight, a.name_weight,
                                         a.decision_weight)
        first = None
        n_tok = sum(len(e[0]) for e in examples)
        n_lab = sum(sum(1 for t in e[1] if t != -100) for e in examples)
        n_call = sum(b - a_ for e in examples for a_, b, w in e[2] if w == a.call_weight)
        print("data: %d examples (%d dropped), %d tokens, %d trained tokens (%d in tool calls), %.1fs"
              % (len(examples), dropped, n_tok, n_lab, n_call, time.time() - t0), flush=True)

    # the vocabulary saturates below VOCAB_SIZE on this narrow data: round the embedding up
    cfg = model_config((tok.get_vocab_size() + 127) // 128 * 128, tok)
    if a.init:
        # continue training saved weights; their shape must match this tokenizer
        model = Qwen3ForCausalLM.from_pretrained(a.init, dtype=torch.float32, attn_implementation="sdpa")
        if model.config.vocab_size != cfg.vocab_size:
            sys.exit("--init model has vocab %d, tokenizer needs %d" % (model.config.vocab_size, cfg.vocab_size))
        n0 = model.config.num_hidden_layers
        if a.grow_layers:
            model = grow_depth(model, a.grow_layers)
        model.config.max_position_embeddings = a.max_pos
        model = model.to(dev)
        print("model: weights from %s, %d layers (was %d), max_position_embeddings %d"
              % (a.init, model.config.num_hidden_layers, n0, a.max_pos), flush=True)
    else:
        model = Qwen3ForCausalLM(cfg, attn_implementation="sdpa").to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    print("model: %.2fM parameters" % (n_params / 1e6), flush=True)

    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embed" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)

    def lr_at(step):
        if step < a.warmup:
            return a.lr * (step + 1) / a.warmup
        p = (step - a.warmup) / max(1, a.steps - a.warmup)
        return a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))

    rng = random.Random(a.seed)
    batches, bi, epoch = make_batches(examples, a.batch_tokens, rng, first), 0, 0
    pad = tok.token_to_id("<|endoftext|>")
    losses, t_train, seen, used, replayed = [], time.time(), 0, 0, 0
    model.train()
    step, steps_planned = 0, a.steps
    paces = []  # (step, time) every 50 steps: the recent pace for --max-seconds-file
    t_saved = time.time()
    while step < a.steps:
        if bi == len(batches):
            new = stream.take(0 if a.replay else 1) if stream is not None and epoch == 0 else []
            if new:
                batches, bi = make_batches(examples, a.batch_tokens, rng, new), 0
            elif stream is not None and epoch == 0 and not stream.done:
                # --replay: the workers are behind the GPU; train on examples already made
                # (drawn at random) instead of waiting for the next chunk
                replayed += 1
                batches, bi = make_batches(examples, a.batch_tokens, rng,
                                           rng.sample(range(len(examples)), min(len(examples), 2000))), 0
            else:
                if stream is not None and epoch == 0:
                    print("step %d: all %d streamed examples used, next epoch" % (step, len(examples)), flush=True)
                batches, bi, epoch = make_batches(examples, a.batch_tokens, rng), 0, epoch + 1
        idx = batches[bi]
        bi += 1
        used += len(idx)
        L = (max(len(examples[i][0]) for i in idx) + 63) // 64 * 64  # fewer distinct shapes
        ids = torch.full((len(idx), L), pad, dtype=torch.long)
        lab = torch.full((len(idx), L), -100, dtype=torch.long)
        wgt = torch.ones((len(idx), L), dtype=torch.float32)
        for r, i in enumerate(idx):
            seq, labels, spans = examples[i]
            if stream is not None:  # uint16 ids and a trained flag per token
                seq = torch.from_numpy(seq.astype("int64"))
                labels = torch.where(torch.from_numpy(labels), seq, -100)
            else:
                seq, labels = torch.tensor(seq), torch.tensor(labels)
            ids[r, :len(seq)] = seq
            lab[r, :len(seq)] = labels
            for s0, s1, w in spans:
                wgt[r, s0:s1] = w
        # the trained positions, found on the CPU so the GPU never waits for a count
        tgt = lab[:, 1:]
        flat = (tgt != -100).reshape(-1).nonzero().squeeze(1)
        tgt = tgt.reshape(-1)[flat]
        w = wgt[:, 1:].reshape(-1)[flat]  # token i predicts label i+1: the weight of i+1
        # pinned copies are asynchronous; a copy from pageable memory waits for the GPU
        ids, flat, tgt, w = (t.pin_memory().to(dev, non_blocking=True) for t in (ids, flat, tgt, w))
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        # right padding needs no attention mask: causal attention never looks ahead.
        # Logits only where a label is trained (about a fifth of the tokens): the
        # 8k-wide head over every position would cost more than the whole body.
        with torch.autocast("cuda", dtype=torch.bfloat16):
            hidden = model.model(input_ids=ids).last_hidden_state[:, :-1]
            hidden = hidden.reshape(-1, hidden.size(-1)).index_select(0, flat)
            logits = model.lm_head(hidden).float()
            ce = torch.nn.functional.cross_entropy(logits, tgt, reduction="none")
            loss = (ce * w).sum() / w.sum().clamp(min=1.0)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        seen += ids.numel()
        if a.max_seconds and step == 100:
            t_100 = time.time()
        if a.max_seconds and step == 200:
            # fit the run into the time given: shorten the schedule from the pace of
            # steps 100-200 (the first steps are slower while kernels and memory warm up)
            per = (time.time() - t_100) / 100
            if (time.time() - t_train) + per * (a.steps - step) > a.max_seconds:
                a.steps = step + int((a.max_seconds - (time.time() - t_train)) / per * 0.95)
                print("schedule shortened to %d steps (%.3fs/step)" % (a.steps, per), flush=True)
        if a.max_seconds and step == 400:
            t_400 = time.time()
        if a.max_seconds and step == 600 and a.steps > 700:
            # steps 100-200 still run slower than the steady pace (new batch shapes): fit the
            # schedule once more from steps 400-600, never past the steps asked for
            per = (time.time() - t_400) / 200
            fit = step + int((a.max_seconds - (time.time() - t_train)) / per * 0.97)
            if min(fit, steps_planned) != a.steps:
                a.steps = min(fit, steps_planned)
                print("schedule refitted to %d steps (%.3fs/step)" % (a.steps, per), flush=True)
        if a.max_seconds and step == 1200:
            t_1200 = time.time()
        if a.max_seconds and step == 1800 and a.steps > 1900:
            # (sixth session) the pace still improves after step 600 (0.24 s/step over 400-600,
            # ~0.19 at the end of the fifth session's run, which ended ~200 s before its cap):
            # refit once more from steps 1200-1800, never past the steps asked for
            per = (time.time() - t_1200) / 600
            fit = step + int((a.max_seconds - (time.time() - t_train)) / per * 0.97)
            if min(fit, steps_planned) != a.steps:
                a.steps = min(fit, steps_planned)
                print("schedule refitted to %d steps (%.3fs/step)" % (a.steps, per), flush=True)
        if step % 50 == 0:
            paces.append((step, time.time()))
        if a.max_seconds_file and step % 50 == 0 and step >= 250 and os.path.exists(a.max_seconds_file):
            try:
                want = float(open(a.max_seconds_file).read().split()[0])
            except (OSError, ValueError, IndexError):
                want = a.max_seconds
            if want != a.max_seconds:
                (s0, ts0), (s1, ts1) = paces[-5], paces[-1]
                per = (ts1 - ts0) / (s1 - s0)
                a.max_seconds = want
                fit = step + max(1, int((want - (time.time() - t_train)) / per * 0.97))
                a.steps = min(fit, steps_planned)
                print("step %d: --max-seconds now %.0f from %s, schedule refitted to %d steps (%.3fs/step)"
                      % (step, want, a.max_seconds_file, a.steps, per), flush=True)
        if a.max_seconds and time.time() - t_train > a.max_seconds:
            print("stopping at step %d: --max-seconds reached" % step, flush=True)
            losses.append((step, loss.item()))
            step += 1
            break
        if a.save_every and a.checkpoint and time.time() - t_saved > a.save_every:
            t_s = time.time()
            try:
                save_checkpoint(model, tok, a.out, a.checkpoint, step)
                print("step %d: checkpoint written to %s in %.1fs" % (step, a.checkpoint, time.time() - t_s),
                      flush=True)
            except Exception as e:  # a failed checkpoint must not end the run it insures
                print("step %d: checkpoint failed: %r" % (step, e), flush=True)
            t_saved = time.time()
        if step % 50 == 0 or step == a.steps - 1:
            lv = loss.item()
            losses.append((step, lv))
            el = time.time() - t_train
            print("step %5d  epoch %d  loss %.4f  lr %.2e  %.0f tok/s  %.0fs"
                  % (step, epoch, lv, lr_at(step), seen / max(el, 1e-9), el), flush=True)
        step += 1

    train_s = time.time() - t_train
    if stream is not None:
        stream.close()
        dropped = stream.dropped
        n_tok = sum(len(e[0]) for e in examples)
        n_lab = sum(int(e[1].sum()) for e in examples)
        print("data: %d examples streamed (%d dropped, %d of %d chunks made), %d tokens, %d trained tokens; "
              "%d replays of 2000 made examples while the workers were behind"
              % (len(examples), dropped, stream.n_in, stream.n_jobs, n_tok, n_lab, replayed), flush=True)
    print("loss curve (step: loss):", ", ".join("%d: %.3f" % sl for sl in
                                                 losses[::max(1, len(losses) // 10)] + [losses[-1]]))
    steps_done = step
    # streamed: the examples made so far are the data (more may have been made than used)
    print("training: %d steps, %.1f epochs over the data, %.0fs on the GPU loop, %.0fs total"
          % (steps_done, used / max(1, len(examples)) if stream is not None
             else epoch + bi / max(1, len(batches)), train_s, time.time() - t0), flush=True)

    model = model.to(torch.bfloat16)
    model.config.torch_dtype = "bfloat16"
    model.generation_config.eos_token_id = [tok.token_to_id("<|im_end|>"), pad]
    model.save_pretrained(a.out, max_shard_size="12MB")
    write_generation_config(a.out, tok)
    summary = {"variety": a.variety, "call_weight": a.call_weight, "tokenizer": a.tokenizer,
               "refusal_weight": a.refusal_weight, "name_weight": a.name_weight, "decision_weight": a.decision_weight, "first_turn": a.first_turn, "frame_noise": a.frame_noise, "chat_share": a.chat_share, "replay": a.replay, "mirror_refusal_think": a.mirror_refusal_think, "contrast": a.contrast, "coverage": a.coverage,
               "schema_variety": a.schema_variety, "history_variety": a.history_variety, "schema_bare": a.schema_bare,
               "proc": a.proc, "long": a.long, "long_chars": a.long_chars, "grow_layers": a.grow_layers,
               "invent_objects": a.invent_objects,
               "max_len": a.max_len, "max_pos": a.max_pos, "layers": model.config.num_hidden_layers,
               "init": a.init, "warmup": a.warmup,
               "invented": a.invented, "refusal": a.refusal, "batch_tokens": a.batch_tokens, "lr": a.lr, "steps": steps_done, "steps_planned": steps_planned, "steps_scheduled": a.steps, "seed": a.seed, "n_train_conversations": a.n_train,
               "examples": len(examples), "tokens": n_tok, "trained_tokens": n_lab,
               "parameters": n_params, "train_seconds": round(train_s, 1),
               "final_loss": losses[-1][1], "loss_curve": losses}
    fix_config(a.out)
    with open(a.summary, "w") as f:
        json.dump(summary, f, indent=1)
    for fn in sorted(os.listdir(a.out)):
        print("  %-40s %10d" % (fn, os.path.getsize(os.path.join(a.out, fn))))


if __name__ == "__main__":
    main()
