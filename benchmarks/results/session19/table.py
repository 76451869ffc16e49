import json,os,sys
files=sys.argv[1:]
for f in files:
    if not os.path.exists(f+'.json'): print(f,'missing'); continue
    r=json.load(open(f+'.json'))
    run=[x for x in r['runs'] if x['engine']=='dask'][-1]
    io=run.get('io_bytes_read_written_by_process',{})
    sysc=run.get('system_cpu_s_by_process',{})
    w=[k for k in run['peak_rss_bytes'] if k!='client']
    rss=",".join("%.2f" % (run['peak_rss_bytes'][k]/1e9) for k in w)
    sp=",".join("%.2f" % (v/1e9) for v in run['peak_spilled_bytes'].values())
    wr=",".join("%.1f" % (io[k][1]/1e9) for k in w) if io else "-"
    sy=",".join("%.0f" % sysc[k] for k in w) if sysc else "-"
    print(f"{f:22s} cpu {run['cpu_s_per_1M']:.2f} wall {run['wall_s']:.1f} tree {run['stage_s']['tree']:.1f} verify {run['stage_s']['verify']:.1f} spill {sp} rss {rss} written {wr} sys {sy}")
