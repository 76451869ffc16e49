"""Privacy attacks on anonymized and differentially private models (Goldsteen et al., 2022).

Reproduces the two attack tables of

    A. Goldsteen, G. Ezov, R. Shmelkin, M. Moffie & A. Farkash, "Anonymizing Machine Learning
    Models", DPM 2021 / CBT 2021, LNCS 13140 (arXiv:2007.13086), Tables 1 and 2,

with anonml's attacks (:mod:`anonml.attacks`) and DP baselines (:mod:`anonml.dp`).

Table 1: membership inference
-----------------------------
Data. Adult (``load_adult``: the published split, 32,561 training and 16,281 test rows,
the paper's 12 features, target ``income == ">50K"`` = 1) and Loan (``load_loan``: the
LendingClub 2007-2011 stand-in for the paper's 2015 excerpt; the 50 missing ``revol_util`` are
set to the column's median before anything else; target ``loan_status == "Charged Off"`` = 1;
one fixed stratified 80/20 split, ``random_state=0``).

Targets. ``"rf"``: scikit-learn's ``RandomForestClassifier(n_estimators=100)`` (fully grown
trees, so it overfits: training accuracy about 0.98 on Adult, 1.0 on Loan) on ordinal codes of
the categorical columns and the raw numeric columns (codes instead of one-hot: same accuracy,
ten times faster on sparse one-hot input, which matters for the shadow models). ``"nn"``: the
fully connected tanh network of the membership-inference literature (1024-512-256 units, Adam,
learning rate 1e-4, :class:`anonml.dp.MLPTorchClassifier`, the non-private twin of the DP-SGD
model) on one-hot categorical and standardized numeric columns; for Loan, the 823 three-digit
zip codes enter the networks as their first digit (10 regions), which keeps the input layer (and
DP-SGD's per-example gradients) small.

Defenses (one row each, per seed):

* ``none``: the target trained on the original data.
* ``ag`` at ``k``: :class:`anonml.AccuracyGuidedAnonymizer` as in the paper (majority-label
  medoid, exact Gini tree on the QIs, no refinement) fitted on the undefended target's
  *predictions* on its training data; every feature is a QI on Adult, the 11 of the paper's 18
  QIs that the Loan stand-in has (``load_loan().qi_sets["paper"]``) on Loan; the same model
  (same seed) is then retrained on the anonymized table with the true labels and released.
* ``dp`` at ``epsilon``: for ``"rf"``, diffprivlib's ε-DP random forest
  (:class:`anonml.dp.DPRandomForestClassifier`, 30 random trees of depth 8: diffprivlib's
  10 trees of depth 5 predict the majority class for every Adult record) at ε = 1 and 10;
  for ``"nn"``, the same network trained with DP-SGD (:class:`anonml.dp.DPSGDClassifier`,
  Opacus, PRV accountant) at (ε = 3, δ = 1e-5). Their inputs are encoded with *public*
  knowledge only (see "Public knowledge for the DP models").

Columns. Training accuracy (on the original training records, raw), test accuracy (raw test
rows), and the membership attacks on the released model with the **original** training records
as members and the test records as non-members:

* ``mia_*``: the black-box attack of the paper (:class:`~anonml.attacks.MembershipInferenceBlackBox`,
  the attacker knows half of the members and as many non-members; attack model a random
  forest on the probabilities and the one-hot true label, the stronger of anonml's options;
  decision at probability 0.5): accuracy, precision and recall of the member class on a
  balanced evaluation set, AUC and TPR at 0.1 % FPR.
* ``lira_*``: LiRA (Carlini et al., 2022), online, with ``lira_shadows`` shadow models that
  repeat the *whole training procedure* of the released model (for ``ag``: train, anonymize
  along the predictions, retrain: :class:`AnonymizeThenTrain`; for ``dp``: the DP model), so the
  attacker knows the algorithm and only the data differ; one global variance per side when
  fewer than 64 shadows (the paper's advice). AUC and TPR at 0.1 % and 1 % FPR.
* ``worstcase_auc``: the SACRO-ML worst-case attack (:class:`~anonml.attacks.WorstCaseMembership`),
  mean AUC over ``worstcase_reps`` random 80/20 splits of the model's outputs on members and
  non-members (the attacker is told most memberships: an upper bound for black-box attacks on
  these outputs).

Table 2: attribute inference
----------------------------
Nursery (``load_nursery``, one fixed stratified 80/20 split, ``random_state=0``), a scikit-learn
``DecisionTreeClassifier`` on one-hot features; undefended, and AG at k = 100 with every feature
a QI (guided by the tree's predictions, tree retrained). Columns: test accuracy; the black-box
attribute attack (:class:`~anonml.attacks.AttributeInferenceBlackBox` on ``social``, positive value
``"problematic"``: accuracy, precision and recall on the training records it did not train on),
the same attack model without the target's output (:class:`~anonml.attacks.AttributeInferenceBaseline`,
what the other features alone reveal), and the worst-case attribute risk ratio ARR of ``social``
(:class:`~anonml.attacks.WorstCaseAttribute`: share of training records whose ``social`` the model
singles out over that share among test records, with its one-sided Fisher p-value).

Public knowledge for the DP models
----------------------------------
The DP guarantees hold only if no encoding step reads the private table. Category lists are
the values of the whole public file (training and test part), standing in for a codebook.
Numeric columns are clipped to fixed ranges (:data:`PUBLIC_RANGES`), with money amounts on a
log scale, and scaled to [0, 1]. Adult's ranges are the survey's documented limits (age 17-90,
education-num 1-16, CPS top-codes 99,999 for capital gain and 99 for hours); the capital-loss
cap (5,000) and every Loan cap are round numbers we chose, having seen the file's ranges: they
are not derived from the training rows, but they are not from a codebook either. Values beyond a
range are clipped, which costs accuracy, not privacy. The number of rows and the list of
classes are not protected (as usual).

Simplifications
---------------
* One fixed split per dataset; the seeds vary the models, the anonymizer's tie-breaks and the
  attacks (3 seeds: mean ± standard deviation).
* LiRA on the networks is skipped by default (``lira_shadows={"rf": 16, "nn": 0}``): 8
  shadow networks per row would multiply the network part of the run by about 8. The
  black-box and worst-case attacks cover the networks. The published run (:func:`reproduce`)
  used 8 shadow models for the forests, on seed 0 only (on a loaded 2-core machine one
  AG shadow, i.e. train, anonymize, retrain, took 12 s on Adult and 25 s on Loan).
* The network is trained for ``nn_epochs`` epochs (default 3) at the literature's learning
  rate 1e-4. On Adult its accuracy plateaus by then (training / test accuracy 0.852 / 0.853
  after 3 epochs, 0.852 / 0.851 after 5, 0.864 / 0.860 after 40, measured while choosing
  the budget) and it does not overfit: overfitting at this learning rate would need well over
  40 epochs, many times the run's budget, so the
  attacks on the network are near chance even undefended (the paper's network gave attack
  accuracy 0.53). DP-SGD runs ``dpsgd_epochs`` epochs (default 1) at learning rate 1e-3, for
  the seeds in ``dpsgd_seeds``: Opacus's per-example gradients of this network cost about 20x
  a plain epoch on a CPU.
* The paper's 2015 LendingClub excerpt and 7 of its 18 QIs are not available (``load_loan``).

Usage
-----
>>> from anonml.experiments import attack_tables as at                    # doctest: +SKIP
>>> t1 = at.run_table1(datasets=("adult",), models=("rf",), seeds=(0,))  # doctest: +SKIP
>>> t2 = at.run_table2(seeds=(0, 1, 2))                                 # doctest: +SKIP
>>> at.write_outputs(t1, t2, "docs/results")                           # doctest: +SKIP
"""

from __future__ import annotations

from anonml.experiments.attack_tables._constants import (  # noqa: F401
    AG_PAPER,
    ATTACKS,
    DATASETS,
    MODELS,
    PAPER_TABLE1,
    PAPER_TABLE2,
    PUBLIC_RANGES,
)
from anonml.experiments.attack_tables._data import (  # noqa: F401
    TableData,
    load_data,
)
from anonml.experiments.attack_tables._models import (  # noqa: F401
    AnonymizeThenTrain,
    PublicRangeScaler,
    _dp_rf_bounds,
    _encoder,
    make_model,
)
from anonml.experiments.attack_tables._output import (  # noqa: F401
    markdown_table1,
    markdown_table2,
    reproduce,
    summarize_table1,
    summarize_table2,
    write_outputs,
)
from anonml.experiments.attack_tables.table1 import (  # noqa: F401
    majority_share,
    run_table1,
)
from anonml.experiments.attack_tables.table2 import (  # noqa: F401
    run_table2,
)

__all__ = [
    "ATTACKS",
    "DATASETS",
    "MODELS",
    "PAPER_TABLE1",
    "PAPER_TABLE2",
    "PUBLIC_RANGES",
    "AnonymizeThenTrain",
    "PublicRangeScaler",
    "TableData",
    "load_data",
    "majority_share",
    "make_model",
    "markdown_table1",
    "markdown_table2",
    "reproduce",
    "run_table1",
    "run_table2",
    "summarize_table1",
    "summarize_table2",
    "write_outputs",
]
