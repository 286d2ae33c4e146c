#!/bin/bash
# Two arms of `run_device.sh stream` at once on one GPU (an 8x384 model leaves most of an H100
# idle), then both evaluated at once; the shipped weights are evaluated on the same held-out
# sets while the arms train, as the control every arm must beat.
#   COMMON="VAR=.. ..." A="VAR=.. .." B="VAR=.. .." END_BY=<epoch s> bash run_pair.sh
# $OUT gets A-*.safetensors, B-*.safetensors and results.tar (A/, B/, shipped/: logs, model
# files but the shards, every evaluation output).
set -e -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
cd "$(dirname "$0")"
END_BY=${END_BY:-$(( $(date +%s) + 570 ))}
R=/tmp/pair; rm -rf $R; mkdir -p $R/A $R/B $R/shipped
EV="--sets ${ESETS:-short,probe} --n ${EN:-300}"
EV2="--sets ${ESETS2:-train,long} --n-train ${ENT:-100} --n-long ${ENL:-40}"
(timeout $(( END_BY - $(date +%s) - 20 )) python3 eval_tools.py --model ../ngxllm-tiny $EV --prefix $R/shipped/tools_hf \
   > $R/shipped/eval.log 2>&1 || echo "shipped eval failed or ran out of time" >> $R/shipped/eval.log) &
for arm in A B; do
  # each arm: its own work folder and output; no evaluation inside run_device.sh
  (env $COMMON ${!arm} W=/tmp/ngx$arm OUT=$R/$arm EVAL_LIMIT=0 bash run_device.sh stream > $R/$arm/run.log 2>&1 ||
   echo "arm $arm: run_device.sh failed" >> $R/$arm/run.log) &
done
wait
for arm in A B; do
  tar -C $R/$arm -xf $R/$arm/results.tar && rm $R/$arm/results.tar || true
  for f in $R/$arm/*.safetensors; do if [ -f "$f" ]; then cp "$f" $OUT/$arm-$(basename $f); fi; done
  (left=$(( END_BY - $(date +%s) )); [ $left -gt 20 ] || exit 0
   timeout $left python3 eval_tools.py --model /tmp/ngx$arm/ngxllm-tiny $EV --prefix $R/$arm/tools_hf > $R/$arm/eval.log 2>&1
   left=$(( END_BY - $(date +%s) )); [ $left -gt 20 ] || exit 0
   timeout $left python3 eval_tools.py --model /tmp/ngx$arm/ngxllm-tiny $EV2 --prefix $R/$arm/tools2_hf > $R/$arm/eval2.log 2>&1
  ) || echo "arm $arm eval failed or ran out of time" >> $R/$arm/eval.log &
done
wait
rm -f $R/*/*.safetensors
tar -C $R -cf $OUT/results.tar A B shipped
ls -l $OUT
