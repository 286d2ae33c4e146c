"""Render conversations with the model's chat template, the way transformers
does (same Jinja environment settings and tojson), and cut them into
(prompt, completion) pairs for training: the prompt is exactly what a server
renders with add_generation_prompt, the completion is what the model must
write for one assistant turn, through <|im_end|>.  Needs jinja2 only.
"""
import json
import os

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE_PATH = os.path.join(HERE, "chat_template.jinja")
END = "<|im_end|>"


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                      separators=separators, sort_keys=sort_keys)


def _raise(msg):
    raise jinja2.exceptions.TemplateError(msg)


def template_source():
    with open(TEMPLATE_PATH, encoding="utf-8") as f:
        return f.read()


_COMPILED = {}


def compiled(source=None):
    source = source or template_source()
    t = _COMPILED.get(source)
    if t is None:
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                            extensions=["jinja2.ext.loopcontrols"])
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        t = env.from_string(source)
        _COMPILED[source] = t
    return t


def render(messages, tools=None, add_generation_prompt=False, enable_thinking=True):
    return compiled().render(messages=messages, tools=tools or None,
                             add_generation_prompt=add_generation_prompt,
                             enable_thinking=enable_thinking,
                             bos_token="", eos_token=END)


def last_user_index(messages):
    idx = -1
    for i, m in enumerate(messages):
        if m["role"] == "user":
            idx = i
    return idx


def pairs(conv):
    """(prompt, completion, turn_index) for every assistant turn after the last user message."""
    msgs, tools, think = conv["messages"], conv.get("tools"), conv.get("enable_thinking", True)
    out = []
    lu = last_user_index(msgs)
    for i in range(lu + 1, len(msgs)):
        if msgs[i]["role"] != "assistant":
            continue
        prompt = render(msgs[:i], tools, True, think)
        full = render(msgs[:i + 1], tools, False, think)
        if not full.startswith(prompt):
            raise ValueError("template is not prefix-stable at turn %d" % i)
        completion = full[len(prompt):]
        # the turn ends at <|im_end|>; the newline after it belongs to the next turn
        if not completion.endswith(END + "\n"):
            raise ValueError("assistant turn does not end with <|im_end|>")
        out.append((prompt, completion[:-1], i))
    return out


def segments(conv):
    """The whole conversation as (text, trained) pieces: every assistant turn after the last
    user message is trained, the rest is context; a turn marked "train": false (a history
    written the way clients send it back, gen_data.Gen.vary_history) is context too.  Joined,
    the pieces equal each turn's prompt followed by its completion, so one sequence trains
    all turns at once."""
    out, done = [], ""
    for prompt, completion, i in pairs(conv):
        if not prompt.startswith(done):
            raise ValueError("turn prompts do not extend each other")
        out.append((prompt[len(done):], False))
        out.append((completion, conv["messages"][i].get("train", True)))
        done = prompt + completion
    return out


def first_prompt(conv):
    """The prompt of the first assistant turn after the last user message (evaluation)."""
    msgs = conv["messages"]
    lu = last_user_index(msgs)
    return render(msgs[:lu + 1], conv.get("tools"), True, conv.get("enable_thinking", True)), lu + 1
