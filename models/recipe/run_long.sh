#!/bin/bash
# One long training on a lent machine that goes back after 30 minutes held: started as a
# daemon in the first call and kept alive by back-to-back calls (fifth and sixth sessions).
#   cp -r <recipe> /tmp/mdl/recipe; cp -r models/ngxllm-tiny /tmp/mdl/   # outside the synced tree
#   cd /tmp/mdl/recipe && L=/tmp/long MAXS=1000 <stream env> setsid nohup bash run_long.sh > /tmp/long.log 2>&1 &
# Later calls (each fails at once, exit 3, when the daemon or L/ is missing: a machine that went
# back between calls is a fresh one, and waiting on it only spends device time):
#   L=/tmp/long bash run_long.sh wait SECONDS   # wait up to SECONDS or until res/DONE; logs
#   L=/tmp/long bash run_long.sh maxs SECONDS   # new --max-seconds of the loop (MSF file)
#   L=/tmp/long OUT=$OUT bash run_long.sh collect
# L/: pid (the daemon), ckpt/ (latest checkpoint, every SAVE seconds), final/ (the trained model
# folder), res/ (train log and summary, GPU use, evaluations of final/, DONE when all is over).
# `run_long.sh collect` (with OUT) puts the shards of final/ (else ckpt/) and res.tar in $OUT.
set -o pipefail
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
L=${L:-/tmp/long}
cd "$(dirname "$0")"
alive() { [ -f $L/pid ] && kill -0 "$(cat $L/pid)" 2>/dev/null; }
report() {  # the train log is in w/res while training runs, copied to res/ after it
  T=$L/res/train.log; [ -f $T ] || T=$L/w/res/train.log
  grep -h "schedule\|max-seconds\|stopping\|training:\|failed\|Error\|error" $T $L/res/run.log 2>/dev/null | tail -8
  tail -3 $T 2>/dev/null; tail -2 $L/res/gpu.log 2>/dev/null
  for f in $L/res/tools_hf.md $L/res/tools2_hf.md; do [ -f $f ] && cat $f; done
  ls $L/ckpt $L/final 2>/dev/null | head -20
}
case "$1" in
  wait)
    [ -d $L/res ] || { echo "no $L/res: the machine is a fresh one"; exit 3; }
    [ -f $L/res/DONE ] || alive || { echo "daemon not running and no DONE"; report; exit 3; }
    end=$(( $(date +%s) + ${2:-60} ))
    while [ ! -f $L/res/DONE ] && [ $(date +%s) -lt $end ]; do
      alive || { sleep 2; [ -f $L/res/DONE ] || { echo "daemon ended without DONE"; report; exit 4; }; }
      sleep 5
    done
    [ -f $L/res/DONE ] && cat $L/res/DONE
    report
    exit 0 ;;
  maxs)
    [ -d $L/res ] || { echo "no $L/res: the machine is a fresh one"; exit 3; }
    echo "${2:?seconds}" > $L/maxs; echo "asked for --max-seconds $2"; report; exit 0 ;;
  collect)
    [ -d $L/res ] || { echo "no $L/res: the machine is a fresh one"; exit 3; }
    OUT=${OUT:-/tmp/out}; mkdir -p $OUT
    M=$L/final; [ -f $M/config.json ] || M=$L/ckpt
    [ -f $M/config.json ] || { echo "no model folder in $L"; exit 3; }
    cp $M/*.safetensors $OUT/ 2>/dev/null
    for f in $L/res/*.jsonl; do [ -f $f ] && gzip -kf $f; done
    tar -C $L --exclude='*.jsonl' -cf $OUT/res.tar res $(cd $L && ls $(basename $M)/* | grep -v '\.safetensors$')
    ls -l $OUT
    exit 0 ;;
esac
mkdir -p $L/res
echo $$ > $L/pid
(while sleep 15; do echo "$(date +%s) $(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader) load $(cut -d' ' -f1 /proc/loadavg)"; done >> $L/res/gpu.log) &
gpu=$!
MSF=$L/maxs W=$L/w KEEP=$L/final CKPT=$L/ckpt SAVE=${SAVE:-180} EVAL_LIMIT=0 OUT=$L/w-out bash run_device.sh stream > $L/res/run.log 2>&1 ||
  echo "run_device.sh failed" >> $L/res/run.log
cp $L/w/res/* $L/res/ 2>/dev/null
M=$L/final; [ -f $M/config.json ] || M=$L/ckpt
# held-out sets and the training distribution at once (the GPU has room for both)
python3 eval_tools.py --model $M --sets ${ESETS:-short,probe} --n ${EN:-300} --prefix $L/res/tools_hf > $L/res/eval.log 2>&1 &
e1=$!
python3 eval_tools.py --model $M --sets ${ESETS2:-train,long} --n-train ${ENT:-100} --n-long ${ENL:-40} --prefix $L/res/tools2_hf > $L/res/eval2.log 2>&1 &
e2=$!
wait $e1 $e2
kill $gpu 2>/dev/null
echo "evaluated $M" > $L/res/DONE
