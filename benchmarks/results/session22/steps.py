"""CPU per 1M rows and each step per 1M rows of a bench_memory_scale.py JSON: steps.py FILE."""
import json,sys
d=json.load(open(sys.argv[1]))
for r in d['runs']:
    n=r['rows']; st=r['steps']
    print(r.get('code', r.get('version')), n, round(r['cpu_s']/(n/1e6),2) if 'cpu_s' in r else '', ' '.join(f"{k[:6]}={v/(n/1e6):.3f}" for k,v in st.items()))
