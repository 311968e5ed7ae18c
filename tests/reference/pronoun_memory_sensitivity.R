# R reference values for studies/pronoun_memory/sensitivity.py (issue 40, item 5): the
# authors' Exp 2 models with a participant intercept added, and Exp 1B's failed
# by-participant model refitted with bobyqa.
#
# Run from the repo root:
#   GBSTATS_DATA=/path/to/data Rscript tests/reference/pronoun_memory_sensitivity.R
# Writes tests/reference/pronoun_memory_sensitivity_refs.json.
#
# The rows and codings are built as tests/reference/gardner2023_reference.R builds them
# (the authors' joins and contrast attributes, in base R); every fit is
# glmer(..., family = binomial, control = glmerControl(optimizer = "bobyqa")).

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

d <- read.csv(path("exp1b_data.csv"), stringsAsFactors = TRUE)
contrasts(d$Pronoun) <- pronoun_exp1
m <- d[d$M_Type == "pronoun", c("SubjID", "Name", "Pronoun", "M_Response", "M_Acc")]
p <- d[!is.na(d$P_Acc), c("SubjID", "Name", "Pronoun", "P_Pronoun", "P_Acc")]
k <- match(paste(m$SubjID, m$Name, m$Pronoun), paste(p$SubjID, p$Name, p$Pronoun))
b <- cbind(m, p[k, c("P_Pronoun", "P_Acc")])
rownames(b) <- NULL
b$M_Acc_Factor <- as.factor(b$M_Acc)
contrasts(b$M_Acc_Factor) <- cbind("wrong vs right" = c(-0.5, 0.5))

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

exp2_conditions <- "Pronoun + Biographies + PSA + Pronoun:PSA + Pronoun:Biographies + Biographies:PSA + Pronoun:Biographies:PSA"
models <- list(
  exp2_m_memory_participant = list(data = "x", formula = paste(
    "M_Acc ~ 1 +", exp2_conditions, "+ (1 | Name) + (1 | Participant)")),
  exp2_m_prod_participant = list(data = "x", formula = paste(
    "P_Acc ~ 1 + Pronoun + PSA + Pronoun:PSA + Biographies + PSA:Biographies +",
    "Pronoun:Biographies + Pronoun:PSA:Biographies + (1 | Name) + (1 | Participant)")),
  exp2_m_mp_participant = list(data = "x", formula = paste(
    "P_Acc ~ 1 + Pronoun + M_Acc_Factor + PSA + Pronoun:PSA + Pronoun:M_Acc_Factor +",
    "M_Acc_Factor:PSA + Pronoun:M_Acc_Factor:PSA + Biographies + PSA:Biographies +",
    "M_Acc_Factor:Biographies + M_Acc_Factor:PSA:Biographies + Pronoun:Biographies +",
    "Pronoun:PSA:Biographies + Pronoun:M_Acc_Factor:Biographies +",
    "Pronoun:M_Acc_Factor:PSA:Biographies + (1 | Name) + (1 | Participant)")),
  exp1b_m_mp_subjInt_bobyqa = list(data = "b", formula =
    "P_Acc ~ M_Acc_Factor * Pronoun + (1 | SubjID)")
)

fit_record <- function(m) {
  messages <- character(0)
  f <- withCallingHandlers(
    glmer(as.formula(m$formula), data = get(m$data), family = binomial,
          control = glmerControl(optimizer = "bobyqa")),
    warning = function(w) { messages <<- c(messages, conditionMessage(w)); invokeRestart("muffleWarning") },
    message = function(w) { messages <<- c(messages, trimws(conditionMessage(w))); invokeRestart("muffleMessage") })
  co <- coef(summary(f))
  list(formula = m$formula, terms = rownames(co), estimate = unname(co[, "Estimate"]),
       se = unname(co[, "Std. Error"]), p = unname(co[, "Pr(>|z|)"]),
       loglik = as.numeric(logLik(f)), nobs = nobs(f),
       messages = unique(c(messages, f@optinfo$conv$lme4$messages)))
}

out <- lapply(models, fit_record)
out$versions <- list(R = R.version.string, lme4 = as.character(packageVersion("lme4")))
write_json(out, file.path(dir, "pronoun_memory_sensitivity_refs.json"), digits = NA,
           auto_unbox = TRUE, pretty = TRUE)
cat("wrote", file.path(dir, "pronoun_memory_sensitivity_refs.json"), "\n")
