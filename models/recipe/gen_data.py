#!/usr/bin/env python3
"""Deterministic generator of training and evaluation conversations.

Writes JSONL, one conversation per line, in OpenAI-like message shape:
  {"messages": [...], "tools": [...], "enable_thinking": bool, "meta": {...}}
Assistant tool calls are {"id", "type": "function", "function": {"name",
"arguments": "<JSON text>"}}; tool results are {"role": "tool",
"tool_call_id", "name", "content": "<JSON text>"}; reasoning is in
"reasoning_content".  meta says what the first assistant turn after the last
user message must do (expected calls, or none), for evaluation.

The eval split draws values from held-out pools (pools.py) and uses
held-out pairs of tools for parallel calls, so it measures copying and
composition rather than memory.  Stdlib only.

  python3 gen_data.py --split train --n 100000 --seed 1 --out train.jsonl
"""
import argparse
import json
import random
import zlib

from pools import AugPools, CoverAugPools, Pools, VariedAugPools
from tools import TOOLS, TOOL_NAMES, schema_variant

SYSTEM_PROMPTS = [
    "You are a helpful assistant.",
    "You are ngxllm-tiny, a small assistant that can call tools.",
    "You are a concise assistant. Answer briefly.",
    "You help users by calling the available tools when they are needed.",
    "You are a friendly assistant running inside nginx.",
]

REQUEST_FORMS = ["Can you {c}?", "Please {c}.", "{C}.", "Could you {c} for me?",
                 "I need you to {c}.", "{C}, please.", "Hey, {c}.", "{C}?"]
PARALLEL_FORMS = ["Can you {a} and {b}?", "Please {a}, and also {b}.", "{A}. Also {b}.",
                  "I need two things: {a}, and {b}.", "{A} and {b}, please."]
TRIPLE_FORMS = ["Please {a}, {b}, and {c}.", "Can you {a}, {b} and also {c}?",
                "Three things: {a}; {b}; {c}."]

GREETINGS = [
    ("Hello!", "Hello! How can I help you today?"),
    ("Hi there", "Hi! What can I do for you?"),
    ("Good morning!", "Good morning! How can I help?"),
    ("Thanks, that's all.", "You're welcome! Have a great day."),
    ("Thank you!", "You're welcome!"),
    ("Who are you?", "I am ngxllm-tiny, a small assistant model served by nginx. I can chat and call tools."),
    ("What can you do?", "I can answer short questions and, when tools are available, call them for you: weather, files, email, calendar and more."),
    ("How are you?", "I'm doing well, thanks for asking. How can I help?"),
    ("Tell me a joke.", "Why did the developer go broke? Because he used up all his cache."),
    ("Are you a real person?", "No, I am a small language model called ngxllm-tiny."),
    ("What is your name?", "My name is ngxllm-tiny."),
    ("Bye!", "Goodbye! Come back any time."),
    ("Can you keep a secret?", "I don't remember anything between conversations, so your secret is safe."),
    ("Say something nice.", "You are doing great, and your questions are always welcome."),
    ("What is nginx?", "nginx is a fast web server and reverse proxy. I run inside it as a module."),
    ("Give me a tip for focus.", "Work in short blocks of 25 minutes and take a 5 minute break after each."),
    ("What is a tool call?", "A tool call is a structured request I make to a function, with a name and JSON arguments, so the application can run it and give me the result."),
]

NO_TOOL_THINK = [
    "This is a simple message. No tool is needed, I can answer directly.",
    "The user is just chatting. I will reply without calling any tool.",
    "No function is needed for this. I'll answer myself.",
]


_POOLS = {}


def title_first(s):
    return s[:1].upper() + s[1:]


class Gen:
    def __init__(self, split, seed, invented=0.35, refusal=0.10, variety=False, mirror=False,
                 contrast=0.0, coverage=False, schema_variety=0.0, history_variety=0.0,
                 schema_bare=0.0, proc=0.0, long=0.0, long_chars=0, invent_objects=0.0,
                 frame_noise=0.0, think_candidate=0.0, chat_share=0.0):  # DATA_OPTIONS
        self.proc = proc
        self.split = split
        self.schema_bare = schema_bare
        self.history_variety = history_variety
        self.schema_variety = schema_variety
        self.mirror = mirror
        self.contrast = contrast
        self.refusal = refusal
        self.r = random.Random(seed)
        if split not in _POOLS:
            _POOLS[split] = Pools(split)
        self.P = _POOLS[split]
        if split == "train":
            self.P = (CoverAugPools if coverage else VariedAugPools if variety else AugPools)(
                self.P, self.r, invented)

    # ---- pieces ----
    def call(self, name):
        return TOOLS[name][1](self.r, self.P)

    def offered(self, must, k_max=6, k_min=0):
        """Tool schemas offered with the request: the needed ones plus distractors."""
        r = self.r
        others = [n for n in TOOL_NAMES if n not in must]
        k = r.randint(k_min, min(k_max, len(others)))
        names = list(must) + r.sample(others, k)
        r.shuffle(names)
        return names

    def user_for(self, calls):
        r = self.r
        if len(calls) == 1:
            c = calls[0]
            if r.random() < 0.5:
                return r.choice(c["questions"])
            cl = r.choice(c["clauses"])
            return r.choice(REQUEST_FORMS).format(c=cl, C=title_first(cl))
        cl = [r.choice(c["clauses"]) for c in calls]
        if len(calls) == 2:
            return r.choice(PARALLEL_FORMS).format(a=cl[0], b=cl[1], A=title_first(cl[0]))
        return r.choice(TRIPLE_FORMS).format(a=cl[0], b=cl[1], c=cl[2])

    def think_call(self, calls):
        r = self.r
        if len(calls) == 1:
            c = calls[0]
            return r.choice([
                "The user wants %s. The %s tool does this, so I will call it." % (c["what"], c["name"]),
                "I need %s. I'll call %s with the values from the request." % (c["what"], c["name"]),
                "%s is available for this. Calling it to get %s." % (c["name"], c["what"]),
            ])
        parts = ", ".join("%s (%s)" % (c["what"], c["name"]) for c in calls)
        return "The user asks for %d things: %s. They are independent, so I will make all %d calls at once." % (
            len(calls), parts, len(calls))

    def think_answer(self, calls):
        if len(calls) == 1:
            return "The %s tool returned its result. I can now answer the user with it." % calls[0]["name"]
        return "All %d tools returned. I'll combine their results in one answer." % len(calls)

    def tool_msgs(self, calls):
        r = self.r
        tcs, results = [], []
        for c in calls:
            cid = "call_%08x" % r.getrandbits(32)
            tcs.append({"id": cid, "type": "function",
                        "function": {"name": c["name"],
                                     "arguments": json.dumps(c["args"], ensure_ascii=False)}})
            res = c["result"]
            if c.get("error"):
                res = {"error": c["error"]}
            results.append({"role": "tool", "tool_call_id": cid, "name": c["name"],
                            "content": json.dumps(res, ensure_ascii=False)})
        return tcs, results

    def assistant(self, content, think, reasoning, tool_calls=None):
        m = {"role": "assistant", "content": content}
        if tool_calls:
            m["tool_calls"] = tool_calls
        if think:
            m["reasoning_content"] = reasoning
        return m

    # ---- conversation kinds ----
    def pick_calls(self, n):
        r = self.r
        if n == 1:
            return [self.call(r.choice(TOOL_NAMES))]
        if r.random() < 0.35:  # the same tool twice with different values
            name = r.choice(TOOL_NAMES)
            names = [name] * n
        else:
            for _ in range(50):
                names = r.sample(TOOL_NAMES, n)
                pair_held = is_heldout_combo(names)
                if pair_held == (self.split == "eval"):
                    break
        calls = [self.call(nm) for nm in names]
        keys = [json.dumps(c["args"], sort_keys=True) for c in calls]
        if len(set(keys)) < len(keys):
            return self.pick_calls(n)
        return calls

    def conv_calls(self, n, think):
        r = self.r
        calls = self.pick_calls(n)
        names = self.offered(sorted(set(c["name"] for c in calls)), 4)
        user = self.user_for(calls)
        if n == 1 and r.random() < 0.04 and calls[0]["name"] in ("read_file", "list_directory",
                                                                   "http_get", "track_package"):
            calls[0]["error"] = "not found"
            calls[0]["answer"] = "The %s tool reported an error: not found." % calls[0]["name"]
        tcs, results = self.tool_msgs(calls)
        content = ""
        if r.random() < 0.1:
            content = r.choice(["Let me check that.", "One moment.", "Sure, checking now."])
        msgs = [{"role": "user", "content": user},
                self.assistant(content, think, self.think_call(calls), tcs)]
        msgs += results
        ans = " ".join(c["answer"] for c in calls)
        msgs.append(self.assistant(ans, think, self.think_answer(calls)))
        if self.history_variety and r.random() < self.history_variety:
            self.vary_history(msgs, think)
        meta = {"kind": "parallel" if n > 1 else "single",
                "expected": [{"name": c["name"], "arguments": c["args"]} for c in calls]}
        self.last_calls = calls
        self.used = {}
        for c in calls:
            self.used.setdefault(c["name"], set()).update(c["args"])
        return msgs, names, meta

    def vary_history(self, msgs, think):
        """The call turn and tool results the way clients send them back: arguments as the
        server returned them (compact JSON), reasoning and content dropped, results in other
        shapes (compact, keys renamed, unquoted keys dropped, wrapped, no name).  The call
        turn becomes context (not trained); only the answer after it is trained."""
        r = self.r
        call, answer = msgs[1], msgs[-1]["content"]
        call["train"] = False
        if r.random() < 0.6:
            for tc in call["tool_calls"]:
                args = json.loads(tc["function"]["arguments"])
                tc["function"]["arguments"] = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
        if think and r.random() < 0.5:
            del call["reasoning_content"]
        if r.random() < 0.5:
            call["content"] = None
        for m in msgs:
            if m["role"] != "tool":
                continue
            res = json.loads(m["content"])
            if isinstance(res, dict) and r.random() < 0.6:
                res = vary_result(r, res, answer)
            sep = (",", ":") if r.random() < 0.6 else (", ", ": ")
            m["content"] = json.dumps(res, ensure_ascii=False, separators=sep)
            if r.random() < 0.5:
                del m["name"]

    def conv_no_tool(self, think, with_tools):
        r = self.r
        k = r.random()
        if k < 0.45:
            u, a = r.choice(GREETINGS)
            why = r.choice(NO_TOOL_THINK)
        elif k < 0.75:
            u, a, why = self.arithmetic()
        elif k < 0.88:
            country, cap = r.choice(self.P.countries)
            u = r.choice(["What is the capital of %s?", "Capital of %s?", "Which city is the capital of %s?"]) % country
            a = "The capital of %s is %s." % (country, cap)
            why = "This is general knowledge: the capital of %s is %s. No tool needed." % (country, cap)
        else:
            text = r.choice(self.P.phrases + self.P.bodies)
            u = r.choice(["Repeat after me: %s", "Say exactly this: %s", "Echo: %s"]) % text
            a = text
            why = "The user wants the text repeated exactly. No tool needed."
        names = self.offered([], 5, 1) if with_tools else []
        if self.proc and k >= 0.45 and k < 0.75:
            # with procedural tools a calculator is called when offered: not offered here
            names = [n for n in names if n != "calculate"] or ["get_weather"]
        msgs = [{"role": "user", "content": u}, self.assistant(a, think, why)]
        return msgs, names, {"kind": "no_tool" if with_tools else "chat", "expected": []}

    def arithmetic(self):
        r = self.r
        op = r.choice(["+", "-", "*"])
        a, b = (r.randint(2, 99), r.randint(2, 99)) if op != "*" else (r.randint(2, 20), r.randint(2, 12))
        v = {"+": a + b, "-": a - b, "*": a * b}[op]
        u = r.choice(["What is %d %s %d?", "%d %s %d = ?", "Compute %d %s %d.", "How much is %d %s %d?"]) % (a, op, b)
        word = {"+": "adding", "-": "subtracting", "*": "multiplying"}[op]
        why = "Simple arithmetic, %s %d and %d gives %d. No tool needed." % (word, a, b, v)
        return u, "%d %s %d = %d." % (a, op, b, v), why

    def refusal_turn(self, want, think):
        """The assistant's refusal of a request whose tool (want) is not offered."""
        r = self.r
        topic = TOOLS[want["name"]][2]
        a = r.choice([
            "I can't do that here: none of the available tools handles %s." % topic,
            "Sorry, I don't have a tool for %s in this conversation, so I can't do that." % topic,
        ])
        why = "The user wants %s, but no offered tool handles %s. I must not invent a call." % (
            want["what"], topic)
        if self.mirror:
            # open the reasoning the way think_call does, so that its first words do not
            # already tell a refusal from a call: the decision must come from the tool list
            why = r.choice([
                why,
                "I need %s, but none of the offered tools handles %s, so I must not call anything." % (
                    want["what"], topic),
                "%s is not among the offered tools, and no other one handles %s. I must not invent a call." % (
                    want["name"], topic),
            ])
        return self.assistant(a, think, why)

    def without_tool(self, names, name):
        """The offered list with one tool taken out (another one offered if none is left)."""
        names = [n for n in names if n != name]
        if not names:
            names = [self.r.choice([n for n in TOOL_NAMES if n != name])]
        return names

    def conv_refusal(self, think):
        r = self.r
        want = self.call(r.choice(TOOL_NAMES))
        names = self.without_tool(self.offered([], 4, 1), want["name"])
        user = self.user_for([want])
        msgs = [{"role": "user", "content": user}, self.refusal_turn(want, think)]
        return msgs, names, {"kind": "refusal", "expected": []}

    def history(self):
        """A short earlier exchange to put in front, without reasoning (as templates drop it)."""
        r = self.r
        if r.random() < 0.5:
            u, a = r.choice(GREETINGS)
            return [{"role": "user", "content": u}, {"role": "assistant", "content": a}]
        u, a, _ = self.arithmetic()
        return [{"role": "user", "content": u}, {"role": "assistant", "content": a}]

    def conversation(self):
        """One conversation, or with --contrast sometimes two: a one-call conversation and
        its twin, the same request with its tool taken out of the offered list, refused."""
        r = self.r
        think = r.random() < 0.5
        k = r.random()
        # shares: one call, parallel calls, tools not needed, refusal, chat without tools;
        # a larger refusal share is taken from the one-call conversations
        if self.refusal == 0.10:
            cuts = (0.50, 0.68, 0.80, 0.90)
        else:
            one = 0.60 - self.refusal
            cuts = (one, one + 0.18, one + 0.30, one + 0.30 + self.refusal)
        twin = None
        self.used = {}
        if k < cuts[0]:
            msgs, names, meta = self.conv_calls(1, think)
            if self.contrast and r.random() < self.contrast:
                want = self.last_calls[0]
                twin = ([msgs[0], self.refusal_turn(want, think)],
                        self.without_tool(names, want["name"]))
        elif k < cuts[1]:
            msgs, names, meta = self.conv_calls(2 if r.random() < 0.8 else 3, think)
        elif k < cuts[2]:
            msgs, names, meta = self.conv_no_tool(think, True)
        elif k < cuts[3]:
            msgs, names, meta = self.conv_refusal(think)
        else:
            msgs, names, meta = self.conv_no_tool(think, False)
        front = []
        if r.random() < 0.15:
            front = self.history()
        if r.random() < 0.4:
            front = [{"role": "system", "content": r.choice(SYSTEM_PROMPTS)}] + front
        out = {"messages": front + msgs, "tools": self.schemas(names),
               "enable_thinking": think, "meta": meta}
        if twin is None:
            return out
        return [out, {"messages": front + twin[0], "tools": self.schemas(twin[1]),
                      "enable_thinking": think, "meta": {"kind": "refusal", "expected": []}}]

    def schemas(self, names):
        """The offered schemas; with --schema-variety a share of them reworded
        (tools.schema_variant), never dropping a property the turn's calls use."""
        if not self.schema_variety:
            return [TOOLS[n][0] for n in names]
        return [schema_variant(self.r, TOOLS[n][0], self.used.get(n, ()), self.schema_bare)
                if self.r.random() < self.schema_variety else TOOLS[n][0] for n in names]


def vary_result(r, res, answer):
    """A tool result in another client's shape: keys renamed, keys whose value the answer
    does not quote dropped, sometimes wrapped in one more object."""
    out = {}
    for k, v in res.items():
        if not (json.dumps(v, ensure_ascii=False) in answer or str(v) in answer) and r.random() < 0.4:
            continue
        if r.random() < 0.4:
            parts = k.split("_")
            k = r.choice([k + r.choice(["_c", "_value", "_now", "_text"]),
                          parts[0] + "".join(p.title() for p in parts[1:]), k.upper(), k.replace("_", "")])
        out[k] = v
    if not out:
        out = res
    if r.random() < 0.15:
        out = {r.choice(["result", "data", "output"]): out}
    return out


def is_heldout_combo(names):
    key = "+".join(sorted(names))
    return zlib.crc32(key.encode()) % 4 == 0


# The data options: (flag, keyword of generate() and Gen, argparse settings).  gen_data.py
# and train.py take the same flags; defaults write the first weights' data.
DATA_OPTIONS = [
    ("--invented", "invented", dict(type=float, default=0.35,
     help="share of training values replaced by invented ones (pools.AugPools)")),
    ("--refusal", "refusal", dict(type=float, default=0.10,
     help="share of conversations asking for a tool that is not offered")),
    ("--variety", "variety", dict(action="store_true",
     help="invented values in several styles (pools.VariedAugPools)")),
    ("--mirror-refusal-think", "mirror", dict(action="store_true",
     help="refusal reasoning opens like call reasoning (Gen.refusal_turn)")),
    ("--contrast", "contrast", dict(type=float, default=0.0,
     help="share of one-call conversations followed by their refused twin (the same request "
     "without its tool offered), so only the tool list tells a call from a refusal")),
    ("--coverage", "coverage", dict(action="store_true",
     help="invented values over the whole vocabulary, plain-English free text (pools.CoverAugPools)")),
    ("--schema-variety", "schema_variety", dict(type=float, default=0.0,
     help="share of offered schemas reworded (tools.schema_variant)")),
    ("--history-variety", "history_variety", dict(type=float, default=0.0,
     help="share of tool conversations whose call turn and results are written the way clients "
     "send them back, the call turn then context only (Gen.vary_history)")),
    ("--schema-bare", "schema_bare", dict(type=float, default=0.0,
     help="share of reworded schemas that also lose their function description")),
    ("--proc", "proc", dict(type=float, default=0.0,
     help="share of conversations around procedural tools (toolgen.py, lex_train.py)")),
    ("--long", "long", dict(type=float, default=0.0,
     help="share of procedural conversations put in a long agent-shaped context (long system "
     "prompt, many tools, earlier exchanges)")),
    ("--invent-objects", "invent_objects", dict(type=float, default=0.0,
     help="share of procedural tools made on invented objects (nouns, domains and attribute "
     "names invented: lex_train.invent_object)")),
    ("--long-chars", "long_chars", dict(type=int, default=16000,
     help="longest system prompt of a long context, in characters")),
    ("--frame-noise", "frame_noise", dict(type=float, default=0.0,
     help="share of procedural requests wrapped in chatter of plain words (lex_train.noisy_frame)")),
    ("--think-candidate", "think_candidate", dict(type=float, default=0.0,
     help="share of procedural one-call and near-miss refusal reasoning that names the closest "
     "offered tool first and then checks it (lex_train.THINK_*_CAND)")),
    ("--chat-share", "chat_share", dict(type=float, default=0.0,
     help="share of all conversations made plain chat around procedural tools (half with tools "
     "offered, half without; long contexts as --long), on top of the chat the other kinds hold")),
]

# procedural kinds and their shares (the rest of --proc's share after the twins)
PROC_KINDS = [("single", 0.44), ("parallel", 0.14), ("refusal", 0.16), ("no_tool", 0.16), ("chat", 0.10)]


def proc_conversation(split, seed, contrast, long, long_chars, invent=0.0, frame_noise=0.0,
                      think_candidate=0.0, kind=None):
    """One or two (with its refused twin) conversations around procedural tools; kind: one
    of PROC_KINDS instead of a draw by their shares."""
    import lex_train
    from toolgen import ProcGen
    r = random.Random(seed)
    lex = lex_train.lexicon()
    lex.invent = invent
    lex.frame_noise = frame_noise
    lex.think_candidate = think_candidate
    g = ProcGen(lex, r)
    think = r.random() < 0.5
    k, acc = r.random(), 0.0
    if kind is None:
        for kind, share in PROC_KINDS:
            acc += share
            if k < acc:
                break
    if long and r.random() < long:
        conv = g.conversation(kind, think, r.randint(long_chars // 8, long_chars),
                              r.randint(6, 32), r.randint(0, 3))
    else:
        conv = g.conversation(kind, think, 0, None, 1 if r.random() < 0.2 else 0)
    conv["meta"]["proc"] = True
    if kind == "single" and contrast and r.random() < contrast:
        name = conv["meta"]["expected"][0]["name"]
        if not any(name in json.dumps(m) for m in conv["messages"][:-4]):
            return [conv, g.twin(conv)]
    return [conv]


def add_data_args(ap):
    for flag, _, kw in DATA_OPTIONS:
        ap.add_argument(flag, dest=flag[2:].replace("-", "_"), **kw)


def data_opts(a):
    """The parsed data options as keywords for generate()."""
    return {key: getattr(a, flag[2:].replace("-", "_")) for flag, key, _ in DATA_OPTIONS}


def generate(split, n, seed, start=0, **opts):
    """Conversations start..start+n-1 of a split; each one seeded by its index; opts are
    the keywords of DATA_OPTIONS."""
    out = []
    base = zlib.crc32(split.encode()) ^ (seed * 1000003)
    for i in range(start, start + n):
        if opts.get("chat_share"):
            # a stream of its own: with --chat-share 0 no number is drawn and the data is unchanged
            rc = random.Random(base + i * 7919 + 5)
            if rc.random() < opts["chat_share"]:
                out.extend(proc_conversation(split, base + i * 7919 + 6, 0, opts.get("long", 0),
                                             opts.get("long_chars", 16000), opts.get("invent_objects", 0),
                                             0, 0, kind="chat" if rc.random() < 0.5 else "no_tool"))
                continue
        if opts.get("proc") and random.Random(base + i * 7919 + 1).random() < opts["proc"]:
            out.extend(proc_conversation(split, base + i * 7919 + 2, opts.get("contrast", 0),
                                         opts.get("long", 0), opts.get("long_chars", 16000),
                                         opts.get("invent_objects", 0), opts.get("frame_noise", 0),
                                         opts.get("think_candidate", 0)))
            continue
        g = Gen(split, base + i * 7919, **opts)
        c = g.conversation()
        out.extend(c if isinstance(c, list) else [c])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", choices=["train", "eval"], default="train")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="-")
    add_data_args(ap)
    a = ap.parse_args()
    rows = generate(a.split, a.n, a.seed, 0, **data_opts(a))
    f = open(a.out, "w", encoding="utf-8") if a.out != "-" else None
    for row in rows:
        line = json.dumps(row, ensure_ascii=False)
        if f:
            f.write(line + "\n")
        else:
            print(line)
    if f:
        f.close()


if __name__ == "__main__":
    main()
