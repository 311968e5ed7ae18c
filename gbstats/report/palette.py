"""The house colours, apart from matplotlib: a module that only names colours (the effects
figure's sides) can import them without importing matplotlib (about 0.5 s), which a run
whose figures come from the cache never needs (issue 41)."""

# Okabe & Ito (2008): distinguishable with the common colour-vision deficiencies.
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9",
             "#F0E442", "#000000"]
