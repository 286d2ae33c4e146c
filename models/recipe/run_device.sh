#!/bin/bash
# Train and evaluate on the accelerator machine; results go to $OUT.
#   bash models/recipe/run_device.sh smoke|full|long|varied|finetune|next|copyft|cover|cover2|proc|stream
# $OUT gets: the safetensors shards (each <= 12 MB) and results.tar holding the
# rest of the model folder, the training log and the evaluation files.
set -e -o pipefail
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=true
mode=${1:-smoke}
OUT=${OUT:-/tmp/out}
W=${W:-/tmp/ngx}; rm -rf $W; mkdir -p $W/res $OUT
cd "$(dirname "$0")"
python3 -c 'import torch, transformers, tokenizers, jinja2; print("torch", torch.__version__, "transformers", transformers.__version__, "tokenizers", tokenizers.__version__, torch.cuda.get_device_name(0))'
if [ "$mode" = smoke ]; then
  targs="--n-train 20000 --n-tok 5000 --steps 300"; eargs="--n 60"
elif [ "$mode" = long ]; then
  # the suggested next run: about 2600 steps fitted into 400 s of loop, more invented
  # values and refusals; a short evaluation here, the full one through our engine on a CPU
  targs="--n-train 250000 --n-tok 30000 --steps ${STEPS:-2600} --batch-tokens 98304 --max-seconds 400 --invented 0.7 --refusal 0.15"; eargs="--n 120"
elif [ "$mode" = varied ]; then
  # the shipped tokenizer reused byte for byte; invented values in three styles (syllables,
  # vocabulary pieces, random characters) for 70% of the values; tool-call tokens weigh 3x
  targs="--tokenizer ../ngxllm-tiny/tokenizer.json --variety --call-weight 3 --invented 0.7 --refusal 0.15 --n-train 300000 --steps ${STEPS:-2800} --batch-tokens 98304 --max-seconds ${MAXS:-360}"; eargs="--n 400"
elif [ "$mode" = finetune ]; then
  # a short second stage from the 'varied' weights (carried in models/stage1): refusals no
  # longer weighed 3x (the varied run over-refused with thinking on), fewer refusals, lower peak lr
  targs="--tokenizer ../ngxllm-tiny/tokenizer.json --init ../stage1 --variety --call-weight 3 --refusal-weight 1 --invented 0.7 --refusal 0.12 --n-train 100000 --steps ${STEPS:-560} --warmup 30 --lr 1e-3 --seed 4321 --batch-tokens 98304 --max-seconds ${MAXS:-150}"; eargs="--n 400"
elif [ "$mode" = next ]; then
  # prepared, not run: refusal reasoning that opens like call reasoning, refusals unweighted
  targs="--tokenizer ../ngxllm-tiny/tokenizer.json --variety --mirror-refusal-think --call-weight 3 --refusal-weight 1 --invented 0.7 --refusal 0.12 --n-train 300000 --steps ${STEPS:-2800} --batch-tokens 98304 --max-seconds ${MAXS:-380}"; eargs="--n 400"
elif [ "$mode" = copyft ]; then
  # continue the shipped weights at a lower peak lr on fresh data (seed 777): more invented
  # (copy-only) values, call tokens weigh 4x, and contrast twins (a one-call request again
  # without its tool, refused) in place of half of the plain refusals
  targs="--tokenizer ../ngxllm-tiny/tokenizer.json --init ../ngxllm-tiny --variety --mirror-refusal-think --contrast 0.15 --call-weight 4 --refusal-weight 1 --invented 0.8 --refusal 0.06 --n-train 240000 --steps ${STEPS:-2400} --warmup 50 --lr 8e-4 --seed 777 --batch-tokens 98304 --max-seconds ${MAXS:-330}"; eargs="--n 400"
elif [ "$mode" = cover ]; then
  # invented values over the whole vocabulary and plain-English free text (--coverage),
  # reworded schemas (--schema-variety) so that contrast twins teach the tool list and not
  # its exact text; logits only at trained positions (about twice the pace)
  targs="--tokenizer ../ngxllm-tiny/tokenizer.json --variety --coverage --mirror-refusal-think --contrast 0.15 --schema-variety 0.5 --call-weight 3 --refusal-weight 1 --invented 0.8 --refusal 0.06 --n-train ${NTRAIN:-320000} --steps ${STEPS:-8000} --batch-tokens 98304 --max-seconds ${MAXS:-420}"; eargs="--n 400"
elif [ "$mode" = cover2 ]; then
  # a further stage from the weights carried in models/stage1: fresh data (SEED), lower lr (LR),
  # client-style histories (HIST, --history-variety), schemas without a description (BARE)
  targs="--tokenizer ../ngxllm-tiny/tokenizer.json --init ../stage1 --variety --coverage --mirror-refusal-think --contrast 0.15 --schema-variety 0.5 --call-weight 3 --refusal-weight 1 --invented 0.8 --refusal 0.06 --n-train ${NTRAIN:-300000} --steps ${STEPS:-8000} --history-variety ${HIST:-0} --schema-bare ${BARE:-0} --warmup 50 --lr ${LR:-1e-3} --seed ${SEED:-4242} --batch-tokens 98304 --max-seconds ${MAXS:-360}"; eargs="--n 400"
elif [ "$mode" = proc ]; then
  # tools procedurally made from word lists (toolgen.py, lex_train.py) for PROC of the data,
  # a share LONG of them in agent-shaped contexts up to --max-len tokens; the older data
  # (33 fixed tools, cover options) for the rest.  INIT: weights to continue (GROW: grown to
  # that many layers first); evaluation on the held-out tools (eval_tools.py)
  targs="--tokenizer ../ngxllm-tiny/tokenizer.json --init ${INIT:-../ngxllm-tiny} --grow-layers ${GROW:-0} --max-pos 32768 --max-len ${MAXLEN:-12288} --proc ${PROC:-0.8} --long ${LONG:-0.15} --invent-objects ${INVENT:-0} --variety --coverage --mirror-refusal-think --contrast 0.15 --schema-variety 0.5 --call-weight 3 --refusal-weight 1 --invented 0.8 --refusal 0.06 --history-variety 0.3 --schema-bare 0.3 --n-train ${NTRAIN:-240000} --steps ${STEPS:-8000} --warmup ${WARMUP:-100} --lr ${LR:-1e-3} --seed ${SEED:-2301} --batch-tokens 98304 --max-seconds ${MAXS:-330}"; eargs="tools"
elif [ "$mode" = stream ]; then
  # (sixth session) CHAT: share of all conversations made plain chat (--chat-share); MSF: a file
  # read while training for a new MAXS (--max-seconds-file, run_long.sh maxs)
  # (fifth session) FIRST: share of conversations cut after their first trained turn
  # (--first-turn); SAVE: seconds between checkpoints into CKPT (--save-every, run_long.sh)
  # (fourth session) DECW: loss weight of the token where a trained answer begins, and of the
  # verdict words of candidate-first reasoning (--decision-weight)
  # (third session) FRAME: share of requests wrapped in chatter (--frame-noise); REPLAY=1:
  # train on made examples again while the workers are behind the GPU (--replay); NAMEW: extra
  # weight of a called name's tokens (--name-weight); THINKC: share of candidate-first reasoning
  # (--think-candidate; third session: a 301-step trial only)
  # proc with the data made while training (--stream, 12 worker processes), invented objects
  # for most tools (INVENT) and few long contexts (LONG) in a first stage; KEEP: a folder
  # outside $W where the weights stay for a next call on the same (warm) machine
  targs="--tokenizer ../ngxllm-tiny/tokenizer.json --init ${INIT:-../ngxllm-tiny} --grow-layers ${GROW:-0} --max-pos 32768 --max-len ${MAXLEN:-12288} --proc ${PROC:-0.9} --long ${LONG:-0.03} --long-chars ${LONGCH:-16000} --invent-objects ${INVENT:-0.8} --variety --coverage --mirror-refusal-think --contrast ${CONTRAST:-0.15} --schema-variety 0.5 --call-weight 3 --refusal-weight ${RW:-1} --invented 0.8 --refusal 0.06 --history-variety 0.3 --schema-bare 0.3 --n-train ${NTRAIN:-1000000} --steps ${STEPS:-20000} --warmup ${WARMUP:-100} --lr ${LR:-1e-3} --seed ${SEED:-2311} --batch-tokens ${BT:-98304} --max-seconds ${MAXS:-330} --stream --procs ${PROCS:-12} --frame-noise ${FRAME:-0} --name-weight ${NAMEW:-1} --think-candidate ${THINKC:-0} --decision-weight ${DECW:-1} --first-turn ${FIRST:-0} --save-every ${SAVE:-0} --checkpoint ${CKPT:-$W/ckpt} --chat-share ${CHAT:-0} ${MSF:+--max-seconds-file $MSF} ${REPLAY:+--replay}"; eargs="tools"
else
  targs="--n-train ${NTRAIN:-200000} --n-tok 30000 --steps ${STEPS:-1500} --batch-tokens 98304"; eargs="--n 400"
fi
t0=$(date +%s)
python3 train.py --out $W/ngxllm-tiny $targs --summary $W/res/train_summary.json 2>&1 | tee $W/res/train.log
t1=$(date +%s)
# weights and model files first, so they come back even if the evaluation runs out of time
cp $W/ngxllm-tiny/*.safetensors $OUT/
if [ -n "$KEEP" ]; then rm -rf "$KEEP"; mkdir -p "$KEEP"; cp $W/ngxllm-tiny/* "$KEEP"/; fi
tar -C $W -cf $OUT/results.tar res $(cd $W && ls ngxllm-tiny/* | grep -v '\.safetensors$')
# END_BY (epoch seconds): cut the evaluation so the whole command ends before the call's limit
lim=${EVAL_LIMIT:-150}   # EVAL_LIMIT=0: no evaluation here
if [ -n "$END_BY" ]; then left=$((END_BY - $(date +%s))); [ $left -lt $lim ] && lim=$left; fi
[ $lim -ge 20 ] || { echo "no time left for eval.py (or EVAL_LIMIT=0)"; lim=1; }
if [ "$lim" = 1 ]; then
  :  # no evaluation here (EVAL_LIMIT=0 or no time left)
elif [ "$eargs" = tools ]; then
  timeout $lim python3 eval_tools.py --model $W/ngxllm-tiny --sets ${ESETS:-short,long,probe} --n ${EN:-400} --n-long ${ENL:-200} --prefix $W/res/tools_hf 2>&1 | tee $W/res/eval.log || echo "eval_tools.py failed or ran out of time"
else
  timeout $lim python3 eval.py --model $W/ngxllm-tiny $eargs --prefix $W/res/eval_hf 2>&1 | tee $W/res/eval.log || echo "eval.py failed or ran out of time"
fi
t2=$(date +%s)
echo "train.py wall $((t1-t0))s, eval.py wall $((t2-t1))s" | tee $W/res/times.txt
tar -C $W -cf $OUT/results.tar res $(cd $W && ls ngxllm-tiny/* | grep -v '\.safetensors$')
ls -l $OUT
