#!/bin/bash
# Arms of `run_device.sh stream` one after the other on one GPU, each evaluated while the next
# one trains; the shipped weights are evaluated on the same held-out sets during the first.
#   COMMON="VAR=.. ..." ARMS="B C" B="VAR=.. .." C="VAR=.. .." END_BY=<epoch s> bash run_pair.sh
# $OUT gets <arm>-*.safetensors and results.tar (<arm>/, shipped/: logs, model files but the
# shards, every evaluation output).
# (Two arms trained at once ran out of GPU memory on an 80 GB H100: each trainer's batches of
# 98,304 tokens up to 12,288 long held ~37 GB, and the second arm died.)
set -e -o pipefail
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
cd "$(dirname "$0")"
END_BY=${END_BY:-$(( $(date +%s) + 570 ))}
ARMS=${ARMS:-A B}
R=/tmp/pair; rm -rf $R; mkdir -p $R/shipped
EV="--sets ${ESETS:-short,probe} --n ${EN:-300}"
EV2="--sets ${ESETS2:-train,long} --n-train ${ENT:-100} --n-long ${ENL:-40}"
if [ "${SHIPPED:-1}" = 1 ]; then
  (timeout $(( END_BY - $(date +%s) - 20 )) python3 eval_tools.py --model ../ngxllm-tiny $EV --prefix $R/shipped/tools_hf \
     > $R/shipped/eval.log 2>&1 || echo "shipped eval failed or ran out of time" >> $R/shipped/eval.log) &
fi
for arm in $ARMS; do
  mkdir -p $R/$arm
  # its own work folder and output; no evaluation inside run_device.sh
  env $COMMON ${!arm} W=/tmp/ngx$arm OUT=$R/$arm EVAL_LIMIT=0 bash run_device.sh stream > $R/$arm/run.log 2>&1 ||
    echo "arm $arm: run_device.sh failed" >> $R/$arm/run.log
  if [ -f $R/$arm/results.tar ]; then tar -C $R/$arm -xf $R/$arm/results.tar; rm $R/$arm/results.tar; fi
  for f in $R/$arm/*.safetensors; do if [ -f "$f" ]; then mv "$f" $OUT/$arm-$(basename $f); fi; done
  (left=$(( END_BY - $(date +%s) )); [ $left -gt 20 ] || exit 0
   timeout $left python3 eval_tools.py --model /tmp/ngx$arm/ngxllm-tiny $EV --prefix $R/$arm/tools_hf > $R/$arm/eval.log 2>&1
   left=$(( END_BY - $(date +%s) )); [ $left -gt 20 ] || exit 0
   timeout $left python3 eval_tools.py --model /tmp/ngx$arm/ngxllm-tiny $EV2 --prefix $R/$arm/tools2_hf > $R/$arm/eval2.log 2>&1
  ) || echo "arm $arm eval failed or ran out of time" >> $R/$arm/eval.log &
done
wait
tar -C $R -cf $OUT/results.tar $ARMS shipped
ls -l $OUT
