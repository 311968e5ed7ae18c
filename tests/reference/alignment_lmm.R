# lme4 reference values for gbstats.alignment.mixed_model (the alignment mixed model).
#
# Run from the repo root:  Rscript tests/reference/alignment_lmm.R
# Reads tests/reference/alignment_panel.csv (written by make_alignment_data.py),
# writes tests/reference/alignment_lmm_refs.json.
#
# score_z: the item score standardised over the items (each item once: mean 0,
# SD 1 with the n - 1 denominator, as gbstats does). group: factor with
# levels in sorted order (first = reference), treatment contrasts.
# item_group: item x group. lmerTest::lmer, REML, Satterthwaite df; Wald CIs.

suppressPackageStartupMessages({
  library(lme4)
  library(lmerTest)
  library(jsonlite)
})

dir <- file.path("tests", "reference")
if (!dir.exists(dir)) stop("run this script from the repository root")

d <- read.csv(file.path(dir, "alignment_panel.csv"), stringsAsFactors = FALSE)
items <- unique(d[, c("item", "score")])
d$score_z <- (d$score - mean(items$score)) / sd(items$score)
d$group_level <- factor(d$group, levels = sort(unique(d$group), method = "radix"))
d$participant_id <- factor(d$participant)
d$item_id <- factor(d$item)
d$item_group <- factor(paste(d$item, d$group, sep = "|"))

formulas <- list(
  with_item_group = "rating ~ score_z * group_level + (1 + score_z | participant_id) + (1 | item_id) + (1 | item_group)",
  item_only = "rating ~ score_z * group_level + (1 + score_z | participant_id) + (1 | item_id)"
)

fixed_table <- function(fit) {
  s <- coef(summary(fit))
  wald <- confint(fit, parm = "beta_", method = "Wald")
  data.frame(term = rownames(s), estimate = s[, "Estimate"], se = s[, "Std. Error"],
             df = s[, "df"], p_value = s[, "Pr(>|t|)"], ci_low = wald[rownames(s), 1],
             ci_high = wald[rownames(s), 2], row.names = NULL)
}

out <- list(generated_by = "Rscript tests/reference/alignment_lmm.R",
            r_version = R.version.string,
            lme4_version = as.character(packageVersion("lme4")),
            lmerTest_version = as.character(packageVersion("lmerTest")),
            nobs = nrow(d))
for (name in names(formulas)) {
  fit <- lmer(as.formula(formulas[[name]]), data = d, REML = TRUE)
  out[[name]] <- list(formula = formulas[[name]], fixed = fixed_table(fit),
                      singular = isSingular(fit))
}
write_json(out, file.path(dir, "alignment_lmm_refs.json"), digits = NA, auto_unbox = TRUE,
           pretty = TRUE)
cat("wrote", file.path(dir, "alignment_lmm_refs.json"), "\n")
