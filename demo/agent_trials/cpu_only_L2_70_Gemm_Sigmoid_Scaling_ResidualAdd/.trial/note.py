import sys
p='/work/main/.trials/L2_70_Gemm_Sigmoid_Scaling_ResidualAdd/TRIAL_LOG.md'
t=open(p).read()
note=sys.argv[1]
if '## Notes' not in t:
    t=t.replace('## Commands','## Notes (guesses, errors, unclear/wrong instructions, advice not followed)\n\n## Commands',1)
i=t.index('## Commands')
t=t[:i].rstrip('\n')+'\n- '+note+'\n\n'+t[i:]
open(p,'w').write(t)
