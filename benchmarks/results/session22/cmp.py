"""Side-by-side line-profile times (ms per 1M rows) of two line_profiler outputs: cmp.py A B [threshold]."""
import re, sys
def parse(fn):
    out={}; func=None
    for line in open(fn):
        m=re.match(r'Function: (\S+)',line)
        if m: func=m.group(1); continue
        m=re.match(r'\s*(\d+)\s+(\d+)\s+([\d.e+]+)\s+([\d.e+]+)\s+([\d.]+)\s+(.*)$',line)
        if m and func:
            out[(func,int(m.group(1)))]=(float(m.group(3)),m.group(6).strip()[:80], int(m.group(2)))
    return out
a=parse(sys.argv[1]); b=parse(sys.argv[2]); thr=float(sys.argv[3]) if len(sys.argv)>3 else 8
tot={}
for key in sorted(set(a)|set(b)):
    ta=a.get(key,(0,'',0))[0]; tb=b.get(key,(0,'',0))[0]
    if max(ta,tb)>thr:
        print(f"{key[0][:16]:16s} {key[1]:4d} {a.get(key,(0,'',0))[2]:6d} {b.get(key,(0,'',0))[2]:6d} {ta:8.1f} {tb:8.1f} {tb-ta:+7.1f}  {(a.get(key) or b.get(key))[1]}")
