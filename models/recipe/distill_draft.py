#!/usr/bin/env python3
"""
A draft model for speculative decoding distilled from ngxllm-tiny (same tokenizer, same
vocabulary ids, so `llm_model ... draft=` accepts it).

1. Prompts: conversations of the training distribution (gen_data.py, seeds of its own) cut at
   their first assistant turn, as the chat template renders them.
2. The teacher (the model folder given, on the GPU) answers each prompt, sampling at
   temperature 0.7 (greedy answers alone repeat themselves), up to --gen tokens.
3. The student (a Qwen3 of --layers layers and --hidden width, embeddings tied) learns the
   teacher's next-token distribution at every position of prompt and answer: KL(teacher ||
   student) on the full vocabulary, AdamW, cosine schedule, bf16 autocast.
4. The folder written: config.json, model.safetensors, tokenizer files copied from the teacher,
   and distill_summary.json (sizes, steps, loss, greedy agreement with the teacher on held-out
   prompts: how often the student's argmax is the teacher's, per position of the answers).

    python3 models/recipe/distill_draft.py --teacher models/ngxllm-tiny --out /tmp/draft
Needs torch, transformers, tokenizers, jinja2 (the accelerator machine has them).
"""
import argparse
import json
import math
import os
import shutil
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import chatfmt      # noqa: E402
import gen_data     # noqa: E402


def prompts(tok, n, seed, max_len):
    """Token ids of n prompts: conversations cut at the first assistant turn after the last user."""
    out = []
    i = 0
    while len(out) < n:
        for conv in gen_data.generate("train", 64, seed, i):
            text, _ = chatfmt.first_prompt(conv)
            ids = tok.encode(text).ids
            if len(ids) <= max_len:
                out.append(ids)
        i += 64
    return out[:n]


@torch.no_grad()
def teacher_answers(teacher, batch_prompts, gen, pad, eos, temperature):
    """Prompt + the teacher's sampled answer per prompt (left-padded batch, cut at eos)."""
    dev = next(teacher.parameters()).device
    L = max(len(p) for p in batch_prompts)
    ids = torch.full((len(batch_prompts), L), pad, dtype=torch.long)
    att = torch.zeros((len(batch_prompts), L), dtype=torch.long)
    for r, p in enumerate(batch_prompts):
        ids[r, L - len(p):] = torch.tensor(p)
        att[r, L - len(p):] = 1
    out = teacher.generate(input_ids=ids.to(dev), attention_mask=att.to(dev), max_new_tokens=gen,
                           do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
                           pad_token_id=pad, eos_token_id=eos)
    seqs = []
    for r, p in enumerate(batch_prompts):
        ans = out[r, L:].tolist()
        if eos in ans:
            ans = ans[:ans.index(eos) + 1]
        seqs.append((p + ans, len(p)))
    return seqs


def pad_batch(seqs, pad):
    L = max(len(s) for s, _ in seqs)
    ids = torch.full((len(seqs), L), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), L), dtype=torch.bool)
    ans = torch.zeros((len(seqs), L), dtype=torch.bool)
    for r, (s, np_) in enumerate(seqs):
        ids[r, :len(s)] = torch.tensor(s)
        mask[r, :len(s) - 1] = True            # positions that predict a next token
        ans[r, np_ - 1:len(s) - 1] = True      # those that predict the answer
    return ids, mask, ans


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--teacher", default=os.path.join(HERE, "..", "ngxllm-tiny"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=192)
    ap.add_argument("--heads", type=int, default=3)
    ap.add_argument("--kv-heads", type=int, default=1)
    ap.add_argument("--ffn", type=int, default=576)
    ap.add_argument("--prompts", type=int, default=6000)
    ap.add_argument("--held-out", type=int, default=200)
    ap.add_argument("--gen", type=int, default=160, help="answer tokens the teacher writes at most")
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--max-prompt", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--max-seconds", type=float, default=90, help="safety stop of training")
    ap.add_argument("--seed", type=int, default=9001)
    ap.add_argument("--data", help="file of the teacher's answers: read if it exists (same "
                    "prompts, held-out and gen settings), else written, so that several students "
                    "train on one generation")
    a = ap.parse_args()

    from tokenizers import Tokenizer
    from transformers import AutoModelForCausalLM, Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(a.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    t0 = time.time()
    tok = Tokenizer.from_file(os.path.join(a.teacher, "tokenizer.json"))
    teacher = AutoModelForCausalLM.from_pretrained(a.teacher, torch_dtype=torch.bfloat16).to(dev).eval()
    tc = teacher.config
    eos = tc.eos_token_id if isinstance(tc.eos_token_id, int) else tc.eos_token_id[0]
    pad = tc.pad_token_id if tc.pad_token_id is not None else eos

    if a.data and os.path.exists(a.data):
        data = torch.load(a.data)
    else:
        ps = prompts(tok, a.prompts + a.held_out, a.seed, a.max_prompt)
        data = []
        for i in range(0, len(ps), 512):
            data.extend(teacher_answers(teacher, ps[i:i + 512], a.gen, pad, eos, a.temperature))
        if a.data:
            torch.save(data, a.data)
    held, train = data[:a.held_out], data[a.held_out:]
    n_tok = sum(len(s) for s, _ in train)
    print(f"data: {len(train)} sequences, {n_tok} tokens, {len(held)} held out; "
          f"{time.time() - t0:.1f} s", flush=True)

    import inspect
    theta = getattr(tc, "rope_theta", None) or (getattr(tc, "rope_parameters", None) or {}).get(
        "rope_theta", 100000.0)
    rope = ({"rope_parameters": {"rope_type": "default", "rope_theta": theta}}
            if "rope_parameters" in inspect.signature(Qwen3Config.__init__).parameters
            else {"rope_theta": theta})
    cfg = Qwen3Config(vocab_size=tc.vocab_size, hidden_size=a.hidden, intermediate_size=a.ffn,
                      num_hidden_layers=a.layers, num_attention_heads=a.heads,
                      num_key_value_heads=a.kv_heads, head_dim=tc.head_dim,
                      max_position_embeddings=tc.max_position_embeddings,
                      rms_norm_eps=tc.rms_norm_eps, hidden_act="silu", attention_bias=False,
                      attention_dropout=0.0, use_sliding_window=False, tie_word_embeddings=True,
                      initializer_range=0.02, bos_token_id=tc.bos_token_id,
                      eos_token_id=tc.eos_token_id, pad_token_id=tc.pad_token_id, **rope)
    student = Qwen3ForCausalLM(cfg).to(dev)
    n_params = sum(p.numel() for p in student.parameters())
    print(f"student: {a.layers} layers, hidden {a.hidden}, {n_params} parameters", flush=True)

    steps = a.epochs * math.ceil(len(train) / a.batch)
    opt = torch.optim.AdamW(student.parameters(), lr=a.lr, weight_decay=0.01, betas=(0.9, 0.95))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 50) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    g = torch.Generator().manual_seed(a.seed)
    step, t1, loss_v = 0, time.time(), float("nan")
    student.train()
    for ep in range(a.epochs):
        order = torch.randperm(len(train), generator=g).tolist()
        for i in range(0, len(order), a.batch):
            ids, mask, _ = pad_batch([train[j] for j in order[i:i + a.batch]], pad)
            ids, mask = ids.to(dev), mask.to(dev)
            with torch.no_grad(), torch.autocast(dev, dtype=torch.bfloat16):
                tl = teacher(input_ids=ids).logits.float()
            with torch.autocast(dev, dtype=torch.bfloat16):
                sl = student(input_ids=ids).logits.float()
            tl, sl = tl[mask], sl[mask]
            loss = F.kl_div(F.log_softmax(sl, -1), F.log_softmax(tl, -1), log_target=True,
                            reduction="batchmean")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(student.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            loss_v = loss.item()
            if step % 50 == 0:
                print(f"step {step}/{steps} epoch {ep} kl {loss_v:.4f} {time.time() - t1:.1f} s",
                      flush=True)
            if time.time() - t1 > a.max_seconds:
                break
        if time.time() - t1 > a.max_seconds:
            break

    # greedy agreement on the held-out answers: the student's argmax against the teacher's
    student.eval()
    agree = total = 0
    with torch.no_grad(), torch.autocast(dev, dtype=torch.bfloat16):
        for i in range(0, len(held), a.batch):
            ids, _, ans = pad_batch(held[i:i + a.batch], pad)
            ids, ans = ids.to(dev), ans.to(dev)
            ta = teacher(input_ids=ids).logits.argmax(-1)
            sa = student(input_ids=ids).logits.argmax(-1)
            agree += int(((ta == sa) & ans).sum())
            total += int(ans.sum())
    summary = {"teacher": os.path.basename(os.path.normpath(a.teacher)), "parameters": n_params,
               "layers": a.layers, "hidden": a.hidden, "heads": a.heads, "kv_heads": a.kv_heads,
               "ffn": a.ffn, "train_sequences": len(train), "train_tokens": n_tok,
               "steps": step, "planned_steps": steps, "final_kl": loss_v,
               "held_out_answer_positions": total,
               "greedy_agreement": agree / total if total else None,
               "train_seconds": time.time() - t1, "total_seconds": time.time() - t0,
               "args": vars(a)}
    print(json.dumps(summary), flush=True)

    os.makedirs(a.out, exist_ok=True)
    student.to(torch.bfloat16).save_pretrained(a.out, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if os.path.exists(os.path.join(a.teacher, f)):
            shutil.copy(os.path.join(a.teacher, f), os.path.join(a.out, f))
    with open(os.path.join(a.out, "config.json")) as f:
        c = json.load(f)
    c["torch_dtype"] = "bfloat16"
    c["architectures"] = ["Qwen3ForCausalLM"]
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(a.out, "distill_summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
