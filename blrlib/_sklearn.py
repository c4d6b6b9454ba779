"""What blrlib's scikit-learn estimators share: class labels and random states.

Imported only by :mod:`blrlib.bayesian_logistic` and :mod:`blrlib.gp_classifier`, which
need scikit-learn (the optional extra ``blrlib[sklearn]``); the functional API never
imports this module.
"""

import numbers

import numpy as np
from sklearn.utils.multiclass import check_classification_targets, type_of_target


def binary_targets(name, y, allow_one_class=False):
    """``classes_`` and the labels coded 0/1 (``classes_[1]`` is the class coded 1).

    Any two labels are accepted (strings, {-1, 1}, {1, 2}, ...), as scikit-learn's
    classifiers accept them; continuous targets and more than two classes are a
    ``ValueError`` (the latter with scikit-learn's "Only binary classification is
    supported." message).  One class is a ``ValueError`` unless ``allow_one_class``;
    then it is coded 1.
    """
    check_classification_targets(y)
    y_type = type_of_target(y, input_name="y", raise_unknown=True)
    classes, codes = np.unique(y, return_inverse=True)
    if y_type != "binary" or classes.size > 2:
        raise ValueError(
            f"Only binary classification is supported. {name} models two classes; y has "
            f"{classes.size} classes {classes[:6].tolist()}{' ...' if classes.size > 6 else ''} "
            f"(the type of the target is {y_type})."
        )
    if classes.size == 1:
        if not allow_one_class:
            raise ValueError(
                f"{name} needs two classes to fit; y has one class ({classes.tolist()[0]!r} only)"
            )
        return classes, np.ones(codes.shape[0])
    return classes, codes.astype(float)


def class_targets(name, y, allow_one_class=False):
    """``classes_`` and the labels coded 0..K-1 (``classes_[k]`` is the class coded k).

    Any labels scikit-learn's classifiers accept (strings, integers, booleans), two or
    more classes; continuous and multi-output targets are a ``ValueError``.  One class is a
    ``ValueError`` unless ``allow_one_class``; then it is coded 1 (as :func:`binary_targets`).
    For two classes the codes equal :func:`binary_targets`'.
    """
    check_classification_targets(y)
    classes, codes = np.unique(y, return_inverse=True)
    if classes.size == 1:
        return binary_targets(name, y, allow_one_class)
    return classes, codes.astype(np.intp)


def as_generator(random_state, name="random_state"):
    """A ``numpy.random.Generator`` from what scikit-learn accepts as a random state.

    ``None`` (fresh entropy, as scikit-learn's global state is not reproducible), an int
    seed, a ``Generator`` (used as it is) or a legacy ``RandomState`` (one seed drawn from it).
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"{name} must be >= 0 as an int seed, got {random_state}")
        return np.random.default_rng(int(random_state))
    raise TypeError(
        f"{name} must be None, an int seed, a numpy.random.Generator or a numpy.random.RandomState, "
        f"got {type(random_state).__name__}"
    )
