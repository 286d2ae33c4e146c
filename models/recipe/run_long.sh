#!/bin/bash
# One long training on a lent machine that goes back after 30 minutes held: started as a
# daemon in the first call and kept alive by back-to-back calls (fifth session).
#   cp -r <recipe> /tmp/mdl/recipe; cp -r models/ngxllm-tiny /tmp/mdl/   # outside the synced tree
#   cd /tmp/mdl/recipe && L=/tmp/long MAXS=1000 <stream env> setsid nohup bash run_long.sh > /tmp/long.log 2>&1 &
#   (monitor: tail /tmp/long/res/train.log /tmp/long/res/gpu.log; last call: bash run_long.sh collect)
# L/: ckpt/ (latest checkpoint, every SAVE seconds), final/ (the trained model folder),
# res/ (train log and summary, GPU use, evaluations of final/, DONE when all is over).
# `run_long.sh collect` (with OUT) puts the shards of final/ (else ckpt/) and res.tar in $OUT.
set -o pipefail
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
L=${L:-/tmp/long}
cd "$(dirname "$0")"
if [ "$1" = collect ]; then
  OUT=${OUT:-/tmp/out}; mkdir -p $OUT
  M=$L/final; [ -f $M/config.json ] || M=$L/ckpt
  cp $M/*.safetensors $OUT/ 2>/dev/null
  tar -C $L -cf $OUT/res.tar res $(cd $L && ls $(basename $M)/* | grep -v '\.safetensors$')
  ls -l $OUT
  exit 0
fi
mkdir -p $L/res
(while sleep 15; do echo "$(date +%s) $(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader) load $(cut -d' ' -f1 /proc/loadavg)"; done >> $L/res/gpu.log) &
gpu=$!
W=$L/w KEEP=$L/final CKPT=$L/ckpt SAVE=${SAVE:-180} EVAL_LIMIT=0 OUT=$L/w-out bash run_device.sh stream > $L/res/run.log 2>&1 ||
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
