# R reference values for studies.pronoun_memory (dataset gardner2023): the codings,
# the one-row-per-character join, and the glmer fits, done the way the authors' R
# does them, in plain R (base R instead of dplyr, which Debian's R lacks here).
#
# Run from the repo root:  GBSTATS_DATA=/path/to/data Rscript tests/reference/gardner2023_reference.R
# Writes tests/reference/gardner2023_refs.json.
#
# What it records, for tests/studies/test_pronoun_memory_human.py:
# * the contrast matrices as R holds them after `contrasts(f) <- cbind(...)`, and
#   model.matrix() of each model's fixed part on the first 12 rows (the codings
#   gbstats builds must give the same columns under the same names);
# * the joined tables' sizes and column sums (left_join on SubjID, Name, Pronoun in
#   Exp 1, the pronoun rows in Exp 2);
# * every glmer fit of the study with the contrasts set as factor attributes, as
#   the authors set them (which also codes random slopes: lme4 builds a random
#   slope's columns from the factor's attribute, not from glmer's contrasts=
#   argument): fixed effects, SEs, variance components by name, logLik, lme4's
#   messages; and, for the failed Exp 1B fit, the SEs R computes from RX
#   (vcov(use.hessian = FALSE)), which show that its Hessian-based SEs are wrong.
# * one fit with glmer's contrasts= argument instead (Exp 1A memory): it differs,
#   which is the defect gbstats' lme4 engine had before it set the attribute.

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

dir <- file.path("tests", "reference")
if (!dir.exists(dir)) stop("run this script from the repository root")
data_dir <- Sys.getenv("GBSTATS_DATA")
if (data_dir == "") stop("set GBSTATS_DATA to the folder holding gardner2023/")
path <- function(f) file.path(data_dir, "gardner2023", f)

pronoun_exp1 <- cbind("they vs he+she" = c(.33, .33, -.66), "he vs she" = c(-.5, .5, 0))
pronoun_exp2 <- cbind("_T_HS" = c(.33, .33, -.66), "_H_S" = c(-.5, .5, 0))

join_exp1 <- function(d) {
  # dplyr's left_join(m_temp, p_temp, by = c("SubjID", "Name", "Pronoun")), in base R
  m <- d[d$M_Type == "pronoun", c("SubjID", "Name", "Pronoun", "M_Response", "M_Acc")]
  p <- d[!is.na(d$P_Acc), c("SubjID", "Name", "Pronoun", "P_Pronoun", "P_Acc")]
  k <- match(paste(m$SubjID, m$Name, m$Pronoun), paste(p$SubjID, p$Name, p$Pronoun))
  out <- cbind(m, p[k, c("P_Pronoun", "P_Acc")])
  rownames(out) <- NULL
  out
}

exp1 <- function(file, coding) {
  d <- read.csv(path(file), stringsAsFactors = TRUE)
  contrasts(d$Pronoun) <- coding
  j <- join_exp1(d)
  j$M_Acc_Factor <- as.factor(j$M_Acc)
  contrasts(j$M_Acc_Factor) <- cbind("wrong vs right" = c(-0.5, 0.5))
  j
}
a <- exp1("exp1a_data.csv", pronoun_exp1)
b <- exp1("exp1b_data.csv", pronoun_exp1)

e <- read.csv(path("exp2_data.csv"), stringsAsFactors = TRUE)
names(e)[names(e) == "Story"] <- "Biographies"
e$Participant <- as.factor(e$Participant)
e$PSA <- as.factor(e$PSA)
e$Biographies <- as.factor(e$Biographies)
contrasts(e$Pronoun) <- pronoun_exp2
contrasts(e$PSA) <- cbind("_GenLang" = c(-.5, .5))
contrasts(e$Biographies) <- cbind("_They" = c(-.5, .5))
x <- e[e$M_Type == "pronoun", ]
rownames(x) <- NULL
x$M_Acc_Factor <- as.factor(x$M_Acc)
contrasts(x$M_Acc_Factor) <- cbind("_Wrong_Right" = c(-0.5, 0.5))
x$Biographies_HS0 <- x$Biographies
contrasts(x$Biographies_HS0) <- cbind("_T1" = c(0, 1))
x$Biographies_T0 <- x$Biographies
contrasts(x$Biographies_T0) <- cbind("_HS1" = c(1, 0))

exp2_conditions <- "Pronoun + Biographies + PSA + Pronoun:PSA + Pronoun:Biographies + Biographies:PSA + Pronoun:Biographies:PSA"
models <- list(
  exp1a_m_memory = list(data = "a", formula = "M_Acc ~ 1 + Pronoun + (1 + Pronoun | SubjID) + (1 | Name)"),
  exp1a_m_prod = list(data = "a", formula = "P_Acc ~ 1 + Pronoun + (1 + Pronoun | SubjID)"),
  exp1a_m_mp = list(data = "a", formula = "P_Acc ~ 1 + Pronoun + M_Acc_Factor + Pronoun:M_Acc_Factor + (1 | SubjID)"),
  exp1b_m_memory = list(data = "b", formula = "M_Acc ~ 1 + Pronoun + (1 + Pronoun | SubjID)"),
  exp1b_m_prod = list(data = "b", formula = "P_Acc ~ 1 + Pronoun + (1 | SubjID) + (1 | Name)"),
  exp1b_m_mp_subjInt = list(data = "b", formula = "P_Acc ~ M_Acc_Factor * Pronoun + (1 | SubjID)"),
  exp1b_m_mp_itemInt = list(data = "b", formula = "P_Acc ~ M_Acc_Factor * Pronoun + (1 | Name)"),
  exp2_m_memory = list(data = "x", formula = paste("M_Acc ~ 1 +", exp2_conditions, "+ (1 | Name)")),
  exp2_m_prod = list(data = "x", formula = "P_Acc ~ 1 + Pronoun + PSA + Pronoun:PSA + Biographies + PSA:Biographies + Pronoun:Biographies + Pronoun:PSA:Biographies + (1 | Name)"),
  exp2_m_prod_bio_HS0 = list(data = "x", formula = "P_Acc ~ Pronoun * PSA * Biographies_HS0 + (1 | Name)"),
  exp2_m_prod_bio_T0 = list(data = "x", formula = "P_Acc ~ Pronoun * PSA * Biographies_T0 + (1 | Name)")
)

fit_record <- function(m) {
  messages <- character(0)
  f <- withCallingHandlers(
    glmer(as.formula(m$formula), data = get(m$data), family = binomial),
    warning = function(w) { messages <<- c(messages, conditionMessage(w)); invokeRestart("muffleWarning") },
    message = function(w) { messages <<- c(messages, trimws(conditionMessage(w))); invokeRestart("muffleMessage") })
  vc <- as.data.frame(VarCorr(f))
  vc <- vc[is.na(vc$var2), ]
  rec <- list(formula = m$formula,
              fixed = as.list(fixef(f)),
              se = as.list(sqrt(diag(as.matrix(vcov(f))))),
              variance = setNames(as.list(vc$vcov), paste(vc$grp, vc$var1)),
              loglik = as.numeric(logLik(f)), nobs = nobs(f),
              messages = unique(c(messages, f@optinfo$conv$lme4$messages)))
  rec
}

fits <- lapply(models, fit_record)
# the failed fit: its SEs from RX (the fixed-effect block at the estimated theta)
failed <- glmer(as.formula(models$exp1b_m_mp_subjInt$formula), data = b, family = binomial)
fits$exp1b_m_mp_subjInt$se_rx <- as.list(suppressWarnings(sqrt(diag(as.matrix(vcov(failed, use.hessian = FALSE))))))
glm_b <- glm(P_Acc ~ M_Acc_Factor * Pronoun, data = b, family = binomial)
fits$exp1b_m_mp_subjInt$se_glm <- as.list(sqrt(diag(vcov(glm_b))))
# the authors' reported Exp 1B memory -> production model: buildmer kept no random effect
g <- glm(P_Acc ~ 1 + Pronoun + M_Acc_Factor + M_Acc_Factor:Pronoun, data = b, family = binomial)
fits$exp1b_m_mp_buildmer <- list(formula = "P_Acc ~ 1 + Pronoun + M_Acc_Factor + M_Acc_Factor:Pronoun (glm)",
                                 fixed = as.list(coef(g)), se = as.list(sqrt(diag(vcov(g)))),
                                 loglik = as.numeric(logLik(g)), nobs = nobs(g), messages = character(0))

# the same Exp 1A memory model with glmer's contrasts= argument instead of the attribute:
# the random slope is then treatment-coded
a_plain <- a
contrasts(a_plain$Pronoun) <- NULL
coding <- pronoun_exp1
rownames(coding) <- levels(a_plain$Pronoun)
arg_fit <- suppressMessages(glmer(M_Acc ~ 1 + Pronoun + (1 + Pronoun | SubjID) + (1 | Name),
                                  data = a_plain, family = binomial, contrasts = list(Pronoun = coding)))
arg_vc <- as.data.frame(VarCorr(arg_fit))
arg_vc <- arg_vc[is.na(arg_vc$var2), ]

codings <- list(
  exp1_pronoun = unclass(contrasts(a$Pronoun)),
  exp1_memory = unclass(contrasts(a$M_Acc_Factor)),
  exp2_pronoun = unclass(contrasts(x$Pronoun)),
  exp2_psa = unclass(contrasts(x$PSA)),
  exp2_biographies = unclass(contrasts(x$Biographies)),
  exp2_biographies_hs0 = unclass(contrasts(x$Biographies_HS0)),
  exp2_biographies_t0 = unclass(contrasts(x$Biographies_T0)),
  exp2_memory = unclass(contrasts(x$M_Acc_Factor)))
matrix_record <- function(m) list(rownames = rownames(m), colnames = colnames(m), values = unname(m))

design <- function(formula, data) {
  mm <- model.matrix(lme4::nobars(as.formula(formula)), get(data)[1:12, ])
  list(columns = colnames(mm), values = unname(mm))
}

out <- list(
  about = paste("written by tests/reference/gardner2023_reference.R with R", getRversion(),
                "and lme4", as.character(packageVersion("lme4"))),
  joined = list(
    exp1a = list(nrow = nrow(a), sum_M_Acc = sum(a$M_Acc), sum_P_Acc = sum(a$P_Acc),
                 first_subject = as.character(a$SubjID[1]), first_name = as.character(a$Name[1])),
    exp1b = list(nrow = nrow(b), sum_M_Acc = sum(b$M_Acc), sum_P_Acc = sum(b$P_Acc),
                 first_subject = as.character(b$SubjID[1]), first_name = as.character(b$Name[1])),
    exp2 = list(nrow = nrow(x), sum_M_Acc = sum(x$M_Acc), sum_P_Acc = sum(x$P_Acc),
                first_subject = as.character(x$Participant[1]), first_name = as.character(x$Name[1]))),
  codings = lapply(codings, matrix_record),
  designs = lapply(models, function(m) design(m$formula, m$data)),
  fits = fits,
  contrasts_argument = list(formula = models$exp1a_m_memory$formula,
                            fixed = as.list(fixef(arg_fit)),
                            variance = setNames(as.list(arg_vc$vcov), paste(arg_vc$grp, arg_vc$var1)),
                            loglik = as.numeric(logLik(arg_fit))))
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE),
           file.path(dir, "gardner2023_refs.json"))
cat("wrote", file.path(dir, "gardner2023_refs.json"), "\n")
