# R reference values for name_gender's model side (studies/name_gender/model_side.py).
#
# Run from the repo root:
#   Rscript tests/reference/name_gender_model_side.R
# Reads tests/reference/name_gender_model_scores.csv (the embedded model's scores per
# prompt, written by tests/reference/make_name_gender_model_scores.py) and Exp 3's
# centred Helmert matrix from tests/reference/centered_helmert_refs.json (written by
# centered_helmert.R from exp3_data.csv); writes
# tests/reference/name_gender_model_side_refs.json.
#
# Fits, with lmerTest (REML, Satterthwaite df), the model-side LMMs:
#   earlier_exp1 / earlier_exp3: she_logit ~ Condition * GenderRatingCentered + (1 | frame),
#       the earlier report's formula (three-way logit), and the same + (1 | first_name)
#       (issue 31 quotes Exp 1's slope: 0.258 (SE 0.061) without, 0.247 (SE 0.124,
#       df 19, p = .061) with);
#   mirror_exp1_m_cond:       logit_two_way ~ Condition + (1 | frame) + (1 | frame_condition)
#                             + (1 | name_unit) + (1 | item_key)
#   mirror_exp1_m_nameGender: logit_two_way ~ Condition * GenderRatingCentered
#                             + (1 | frame) + (1 | frame_condition) + (1 | first_name)
#                             + (1 | item_key)
#   mirror_exp3_m_noOther:    logit_two_way ~ Condition * GenderRatingCentered
#                             + (1 | frame) + (1 | frame_condition) + (1 | first_name)
#                             + (1 | item_key)   (frame_condition: story x condition, issue 40)
# with the authors' codings: Exp 1's fixed matrices, Exp 3's centred Helmert coding
# (Fraundorf's centerfactor, reference levels "last", "first").

suppressPackageStartupMessages({
  library(lmerTest)
  library(jsonlite)
})

dir <- file.path("tests", "reference")
if (!dir.exists(dir)) stop("run this script from the repository root")
scores <- read.csv(file.path(dir, "name_gender_model_scores.csv"), stringsAsFactors = FALSE)

fixed3 <- matrix(c(0.33, 0.33, -0.66, -0.5, 0.5, 0), nrow = 3,
                 dimnames = list(c("first", "full", "last"),
                                 c("last vs first/full", "first vs full")))
fixed2 <- matrix(c(-0.5, 0.5), nrow = 2, dimnames = list(c("first", "full"), "first vs full"))

# Exp 3's centred Helmert matrix as R computed it from exp3_data.csv's trials
# (tests/reference/centered_helmert.R, which centres on the per-observation means)
helmert <- fromJSON(file.path(dir, "centered_helmert_refs.json"))$exp3
helmert3 <- as.matrix(helmert$matrix)     # jsonlite reads the rows as the matrix's rows
dimnames(helmert3) <- list(helmert$levels, NULL)

with_contrast <- function(rows, levels, matrix) {
  rows$Condition <- factor(rows$Condition, levels = levels)
  contrasts(rows$Condition) <- matrix
  rows
}

summarise <- function(fit, formula) {
  co <- coef(summary(fit))
  vc <- as.data.frame(VarCorr(fit))
  list(formula = formula, terms = rownames(co), estimate = unname(co[, "Estimate"]),
       se = unname(co[, "Std. Error"]), df = unname(co[, "df"]),
       p = unname(co[, "Pr(>|t|)"]), variance = setNames(as.list(vc$vcov), vc$grp),
       nobs = nobs(fit))
}

fit <- function(formula, rows) {
  summarise(lmer(as.formula(formula), data = rows, REML = TRUE), formula)
}

e1 <- scores[scores$experiment == 1, ]
e1$frame_condition <- paste(e1$frame, e1$Condition, sep = ":")
e1ff <- with_contrast(e1[e1$Condition != "last", ], c("first", "full"), fixed2)
e1all <- with_contrast(e1, c("first", "full", "last"), fixed3)
e3 <- with_contrast(scores[scores$experiment == 3, ], c("first", "full", "last"), helmert3)
# Exp 3's story x condition cell (issue 40): 7 stories, each in all three conditions
e3$frame_condition <- paste(e3$frame, e3$Condition, sep = ":")

earlier <- "she_logit ~ Condition * GenderRatingCentered + (1 | frame)"
out <- list(
  earlier_exp1 = fit(earlier, e1ff),
  earlier_exp1_first_name = fit(paste(earlier, "+ (1 | first_name)"), e1ff),
  earlier_exp3 = fit(earlier, e3),
  earlier_exp3_first_name = fit(paste(earlier, "+ (1 | first_name)"), e3),
  mirror_exp1_m_cond = fit(paste("logit_two_way ~ Condition + (1 | frame) + (1 | frame_condition)",
                                 "+ (1 | name_unit) + (1 | item_key)"), e1all),
  mirror_exp1_m_nameGender = fit(paste("logit_two_way ~ Condition * GenderRatingCentered",
                                       "+ (1 | frame) + (1 | frame_condition) + (1 | first_name)",
                                       "+ (1 | item_key)"), e1ff),
  mirror_exp3_m_noOther = fit(paste("logit_two_way ~ Condition * GenderRatingCentered",
                                    "+ (1 | frame) + (1 | frame_condition) + (1 | first_name)",
                                    "+ (1 | item_key)"), e3),
  versions = list(R = R.version.string, lme4 = as.character(packageVersion("lme4")),
                  lmerTest = as.character(packageVersion("lmerTest")))
)

write_json(out, file.path(dir, "name_gender_model_side_refs.json"), digits = NA,
           auto_unbox = TRUE, pretty = TRUE)
cat("wrote", file.path(dir, "name_gender_model_side_refs.json"), "\n")
