"""The reference for Sentinel's emotion head: scikit-learn's multinomial logistic regression (Debian's python3-sklearn)
on the same standardised rows, C and class weighting. Reads JSON {"x": [[...]], "y": [...], "c": C, "balanced": bool}
on stdin; prints {"classes": [...], "coef": [[...]], "intercept": [...]}, fitted to convergence (not scikit-learn's
default tolerance, so that both sides reach the same minimum)."""
import json
import sys

import numpy as np
from sklearn.linear_model import LogisticRegression

task = json.load(sys.stdin)
x, y = np.array(task["x"], dtype=float), np.array(task["y"])
model = LogisticRegression(
    C=task["c"], class_weight="balanced" if task["balanced"] else None, multi_class="multinomial", solver="lbfgs",
    tol=1e-10, max_iter=100000)
model.fit(x, y)
json.dump({"classes": model.classes_.tolist(), "coef": model.coef_.tolist(), "intercept": model.intercept_.tolist()},
          sys.stdout)
