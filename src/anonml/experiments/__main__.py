"""``python -m anonml.experiments``: reproduce the papers' results into docs/.

Examples
--------
python -m anonml.experiments paper-accuracy                    # Fig. 2 AG curves, 3 seeds
python -m anonml.experiments paper-accuracy --variants paper medoid entropy hist depth8 labels
python -m anonml.experiments paper-accuracy --qi-sets 8 --k 100 1000 --seeds 0 --out /tmp/x
python -m anonml.experiments combine docs/results/a.csv docs/results/b.csv --name both
python -m anonml.experiments forgetting                        # Malle et al. (2016): delete vs anonymize
python -m anonml.experiments dp-masking                        # Pham et al. (2019): toy + digits masking
python -m anonml.experiments classic-accuracy                  # Figs. 2-5: AG vs Mondrian, R+-tree, Hilbert
python -m anonml.experiments classic-accuracy --figures fig2 --k 10 100 --seeds 0
python -m anonml.experiments malle                             # SaNGreeA on Adult (Malle et al. 2016)
python -m anonml.experiments attack-tables                     # Tables 1-2: MIA / attribute attacks vs AG, DP
python -m anonml.experiments attack-tables --models rf --no-table2 --seeds 0
"""

from __future__ import annotations

import argparse
import sys
import time

from anonml._errors import AnonmlError


def _done(start: float, paths: dict, markdown: bool = True) -> int:
    """Print the run's time and the files it wrote (and its Markdown summary); exit status 0."""
    print(f"done in {time.perf_counter() - start:.0f}s; wrote " + ", ".join(str(v) for v in paths.values()))
    if markdown:
        print(paths["markdown"].read_text())
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m anonml.experiments", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("paper-accuracy", help="accuracy vs k on Adult (Goldsteen et al. Fig. 2, AG)")
    p.add_argument("--qi-sets", nargs="+", default=["12", "10", "8"])
    p.add_argument("--k", nargs="+", type=int, default=[10, 50, 100, 200, 500, 1000])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--variants", nargs="+", default=["paper"])
    p.add_argument("--ablation-qi-sets", nargs="+", default=["12"])
    p.add_argument("--n-train", type=int, default=None, help="use only the first N training rows")
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--out", default="docs/results")
    p.add_argument("--name", default="accuracy_vs_k")
    c = sub.add_parser("combine", help="merge raw result CSVs of paper-accuracy runs and redraw")
    c.add_argument("csv", nargs="+", help="raw CSVs written by paper-accuracy")
    c.add_argument("--variants", nargs="+", default=None, help="keep only these (and baselines)")
    c.add_argument("--out", default="docs/results")
    c.add_argument("--name", required=True)
    f = sub.add_parser("forgetting", help="right to be forgotten on Adult: deletion vs anonymization (Malle et al.)")
    f.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    f.add_argument("--fractions", nargs="+", type=float, default=[0.2, 0.4, 0.6, 0.8, 1.0])
    f.add_argument("--k", nargs="+", type=int, default=[3, 7, 11, 15, 19, 50, 100])
    f.add_argument("--n-train", type=int, default=None, help="use only the first N training rows")
    f.add_argument("--n-test", type=int, default=None, help="score on the first N test rows only")
    f.add_argument("--n-jobs", type=int, default=2)
    f.add_argument("--out", default="docs/results")
    f.add_argument("--name", default="forgetting")
    a = sub.add_parser("dp-accuracy", help="accuracy vs ε: masked data, output and input perturbation")
    a.add_argument("--datasets", nargs="+", default=None)
    a.add_argument("--epsilons", nargs="+", type=float, default=[0.01, 0.1, 1.0, 10.0])
    a.add_argument("--lams", nargs="+", type=float, default=[1e-3, 1e-4])
    a.add_argument("--reps", type=int, default=10)
    a.add_argument("--n-samples", type=int, default=200)
    a.add_argument("--n-jobs", type=int, default=2)
    a.add_argument("--out", default="docs/results")
    a.add_argument("--name", default="dp_accuracy")
    m = sub.add_parser("dp-masking", help="data masking: toy 2-D and digits experiments (Pham et al. 2019)")
    m.add_argument("--toy-samples", type=int, default=300, help="generated samples per ε, toy")
    m.add_argument("--digits-samples", type=int, default=150, help="generated samples per ε, digits")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--out", default="docs/results")
    m.add_argument("--name", default="dp_masking")
    ca = sub.add_parser("classic-accuracy", help="AG vs classic k-anonymity (Goldsteen et al. Figs. 2-5)")
    ca.add_argument("--figures", nargs="+", default=["fig2", "fig3", "fig4", "fig5"])
    ca.add_argument("--k", nargs="+", type=int, default=[10, 50, 100, 200, 500, 1000])
    ca.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ca.add_argument("--methods", nargs="+", default=None, help="only these methods")
    ca.add_argument("--n-jobs", type=int, default=2)
    ca.add_argument("--out", default="docs/results")
    ca.add_argument("--name", default="classic_vs_ag")
    ma = sub.add_parser("malle", help="SaNGreeA on Adult: 4 classifiers x weight vectors x k (Malle et al.)")
    ma.add_argument("--k", nargs="+", type=int, default=[3, 7, 11, 15, 19])
    ma.add_argument("--weights", nargs="+", default=["equal", "age", "race"])
    ma.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ma.add_argument("--n-jobs", type=int, default=2)
    ma.add_argument("--out", default="docs/results")
    ma.add_argument("--name", default="malle_sangreea")
    at = sub.add_parser("attack-tables", help="membership and attribute attacks: undefended vs AG vs DP (Tables 1-2)")
    at.add_argument("--datasets", nargs="+", default=["adult", "loan"])
    at.add_argument("--models", nargs="+", default=["rf", "nn"])
    at.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    at.add_argument("--no-table2", action="store_true", help="skip Table 2 (Nursery attribute attack)")
    at.add_argument("--n-jobs", type=int, default=2)
    at.add_argument("--out", default="docs/results")
    args = parser.parse_args(argv)
    try:
        from anonml.experiments import paper_accuracy

        if args.command == "attack-tables":
            from anonml.experiments import attack_tables

            t = time.perf_counter()
            cmd = "python -m anonml.experiments " + " ".join(argv if argv is not None else sys.argv[1:])
            paths = attack_tables.reproduce(
                args.out, datasets=args.datasets, models=args.models, seeds=args.seeds,
                n_jobs=args.n_jobs, table2=not args.no_table2, command=cmd,
                progress=lambda msg: print(msg, file=sys.stderr),
            )
            return _done(t, paths, markdown=False)
        if args.command in ("classic-accuracy", "malle"):
            from anonml.experiments import classic_accuracy as ca_mod

            t = time.perf_counter()
            if args.command == "malle":
                results = ca_mod.run_malle(args.k, args.weights, args.seeds, args.n_jobs)
                paths = ca_mod.write_malle(results, args.out, args.name)
            else:
                results = ca_mod.run(args.figures, args.k, args.seeds, args.n_jobs, args.methods,
                                     progress=lambda msg: print(msg, file=sys.stderr))
                paths = ca_mod.write_outputs(results, args.out, args.name)
            return _done(t, paths)
        if args.command == "dp-masking":
            from anonml.experiments import dp_masking

            t = time.perf_counter()
            toy = dp_masking.run_toy(n_samples=args.toy_samples, seed=args.seed)
            digits = dp_masking.run_digits(n_samples=args.digits_samples, seed=args.seed)
            paths = dp_masking.write_outputs(toy, digits, args.out, args.name)
            return _done(t, paths)
        if args.command == "dp-accuracy":
            from anonml.experiments import dp_accuracy

            t = time.perf_counter()
            results = dp_accuracy.run(args.datasets or dp_accuracy.DATASETS, args.epsilons, args.lams,
                                      args.reps, n_samples=args.n_samples, n_jobs=args.n_jobs)
            paths = dp_accuracy.write_outputs(results, args.out, args.name)
            return _done(t, paths)

        if args.command == "forgetting":
            from anonml.experiments import forgetting

            t = time.perf_counter()
            results = forgetting.run(args.seeds, args.fractions, args.k, args.n_jobs, args.n_train,
                                     n_test=args.n_test)
            paths = forgetting.write_outputs(results, args.out, args.name)
            return _done(t, paths)
        if args.command == "combine":
            import pandas as pd

            parts = [pd.read_csv(p, dtype={"qi_set": str}) for p in args.csv]
            rows = pd.concat(parts, ignore_index=True).drop_duplicates(["qi_set", "k", "seed", "variant"])
            if args.variants:
                rows = rows[rows.variant.isin([*args.variants, "baseline"])]
            paths = paper_accuracy.write_outputs(rows, args.out, args.name)
            print("wrote " + ", ".join(str(v) for v in paths.values()))
            return 0
        t = time.perf_counter()
        results = paper_accuracy.run(args.qi_sets, args.k, args.seeds, args.variants,
                                     args.ablation_qi_sets, args.n_train, args.n_jobs)
        paths = paper_accuracy.write_outputs(results, args.out, args.name)
        return _done(t, paths)
    except AnonmlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
