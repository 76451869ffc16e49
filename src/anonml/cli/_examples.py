"""The examples each command's ``--help`` shows (kept apart from :mod:`anonml.cli` to keep
it readable)."""

# the examples of each command, shown by its --help (raw: the line breaks and the backslash
# continuations are kept); the top-level --help shows one or two of each
ANONYMIZE_EXAMPLES = """\
examples:
  anonml anonymize adult.csv --k 100 --qi age sex race --target income --labels -o adult_k100.csv
  anonml anonymize train.parquet --k 50 --qi age,zip --target y --predictions preds.csv \\
      -o anon.parquet
  anonml anonymize train.csv --k 50 --qi age zip --target y --model model.joblib --trust-model \\
      -o anon.csv
  anonml anonymize adult.csv --method mondrian --k 20 --qi age sex race --target income \\
      --sensitive occupation --l 3 --recoding generalize --hierarchies hier/ --drop id -o out.csv
  anonml anonymize diagnoses.csv --k 10 --qi age sex zip --target diagnosis --labels \\
      --sensitive diagnosis --l 2 -o out.csv          # l-diversity of the label itself
  anonml anonymize data/ --engine dask --k 100 --qi age sex race --target income --labels \\
      -o anon/
  anonml anonymize 'data/*.parquet' --engine dask --scheduler tcp://host:8786 --k 100 \\
      --qi age sex race --target income --model m.skops -o anon/
  anonml anonymize adult.csv --k 20 --qi age sex --target income --model m.skops --retrain \\
      --test adult_test.csv --save-mapping mapping.skops --save-pipeline release.skops -o out.csv
"""
TRANSFORM_EXAMPLES = """\
examples:
  anonml transform new_rows.csv --mapping mapping.skops -o new_rows_anonymized.csv
  anonml transform new_rows.csv --mapping mapping.skops --drop id --handle-unknown ignore \\
      -o new_rows_anonymized.csv
"""
AUDIT_EXAMPLES = """\
examples:
  anonml audit --model model.skops --train train.csv --test test.csv --target income -o report/
  anonml audit --model release.skops --train train.csv --test test.csv --target income \\
      --rules risk_appetite.toml --fail-unless-release -o report/
  anonml audit --model model.skops --train train.csv --test test.csv --target income \\
      --attacks worst_case,attribute --categorical ca thal --formats json,html -o report/
  anonml audit --train-proba p_train.csv --test-proba p_test.csv --train train.csv \\
      --test test.csv --target y -o report/
"""
DEMO_EXAMPLES = """\
examples:
  anonml demo
  anonml demo -o results/ --k 50 --json
"""
RULES_EXAMPLES = """\
examples:
  anonml rules init risk_appetite.toml
  anonml rules check risk_appetite.toml
  anonml audit --rules risk_appetite.toml ...
"""
EXAMPLES = """\
examples (each command's --help has more):
  anonml demo
  anonml anonymize adult.csv --k 100 --qi age sex race --target income --labels -o adult_k100.csv
  anonml anonymize adult.csv --k 20 --qi age sex --target income --model m.skops --retrain \\
      --test adult_test.csv --save-mapping mapping.skops -o out.csv
  anonml transform new_rows.csv --mapping mapping.skops -o new_rows_anonymized.csv
  anonml frontier --train train.csv --test test.csv --target income --qi age sex race \\
      --estimator random_forest --out frontier/ --accuracy-budget 0.01
  anonml audit --model model.skops --train train.csv --test test.csv --target income -o report/
  anonml rules init risk_appetite.toml
"""
