# R reference values for gbstats.alignment.side_difference (issue 40: every people-vs-model
# verdict of name_gender rests on a test of the difference).
#
# Run from the repo root:
#   GBSTATS_DATA=/path/to/data Rscript tests/reference/name_gender_side_difference.R
# Reads Gardner & Brown-Schmidt's (2024) exp1_data.csv and exp3_data.csv (people), the
# embedded model's scores per prompt (tests/reference/name_gender_model_scores.csv; the
# model's two-way share is plogis(logit_two_way)) and Exp 3's centred Helmert matrix
# (tests/reference/centered_helmert_refs.json); writes
# tests/reference/name_gender_side_difference_refs.json.
#
# What it computes, independently of gbstats' code:
#   * people: glm(She ~ fixed part, quasibinomial) on the he/she trials (Other == 0);
#     the model: glm(share ~ fixed part, quasibinomial) on its prompts; the authors'
#     codings (Exp 1's fixed matrices, Exp 3's centred Helmert);
#   * the joint cluster-robust covariance of both sides' coefficients, built by hand:
#     bread = (X'WX)^-1 per side (block-diagonal), meat = G/(G-1) sum_g s_g s_g' with s_g
#     the stacked score sums X'(y - mu) of cluster g on both sides; clusters are first
#     names (Exp 1's condition model: the first name, or the last name where it is shown
#     alone);
#   * each effect as a contrast of cells from model.matrix on a grid, the difference
#     people minus model, its SE, t with G - 1 df, and the TOST p at 0.20.

suppressPackageStartupMessages(library(jsonlite))

dir <- file.path("tests", "reference")
if (!dir.exists(dir)) stop("run this script from the repository root")
data_dir <- Sys.getenv("GBSTATS_DATA")
if (data_dir == "") stop("set GBSTATS_DATA to the folder holding gardner2024/")
bound <- 0.20

fixed3 <- matrix(c(0.33, 0.33, -0.66, -0.5, 0.5, 0), nrow = 3,
                 dimnames = list(c("first", "full", "last"),
                                 c("last vs first/full", "first vs full")))
fixed2 <- matrix(c(-0.5, 0.5), nrow = 2, dimnames = list(c("first", "full"), "first vs full"))
helmert <- fromJSON(file.path(dir, "centered_helmert_refs.json"))$exp3
helmert3 <- as.matrix(helmert$matrix)
dimnames(helmert3) <- list(helmert$levels, NULL)

coded <- function(x, levels, matrix) {
  x <- factor(x, levels = levels)
  contrasts(x) <- matrix
  x
}

e1 <- read.csv(file.path(data_dir, "gardner2024", "exp1_data.csv"), stringsAsFactors = FALSE)
e3 <- read.csv(file.path(data_dir, "gardner2024", "exp3_data.csv"), stringsAsFactors = FALSE)
e1$GenderRatingCentered <- e1$GenderRating - mean(e1$GenderRating, na.rm = TRUE)
e3$GenderRatingCentered <- e3$GenderRating - mean(e3$GenderRating, na.rm = TRUE)
e1$cluster <- ifelse(e1$Condition == "last", e1$NameLast, e1$NameFirst)
e3$cluster <- sub(" .*", "", e3$Name)
condition_share3 <- as.numeric(table(factor(e3$Condition, levels = c("first", "full", "last")))) /
  nrow(e3)

scores <- read.csv(file.path(dir, "name_gender_model_scores.csv"), stringsAsFactors = FALSE)
scores$share <- plogis(scores$logit_two_way)
s1 <- scores[scores$experiment == 1, ]
s3 <- scores[scores$experiment == 3, ]

# one side's fit: coefficients, information matrix and per-cluster score sums
side <- function(rhs, rows, response, cluster, clusters) {
  fit <- suppressWarnings(glm(as.formula(paste(response, "~", rhs)), data = rows,
                              family = quasibinomial))
  X <- model.matrix(fit)
  mu <- fitted(fit)
  y <- rows[[response]]
  info <- crossprod(X, X * (mu * (1 - mu)))
  sums <- rowsum(X * (y - mu), factor(rows[[cluster]], levels = clusters))
  list(beta = coef(fit), info = info, sums = sums, rhs = rhs)
}

# the design row of a cell (or its weighted sum over cells)
contrast <- function(grid, weights, rhs) {
  X <- model.matrix(as.formula(paste("~", rhs)), grid)
  colSums(X * weights)
}

joint <- function(name, rhs, people, model, effects) {
  clusters <- sort(unique(c(people$cluster, model$cluster)))
  p <- side(rhs, people, "She", "cluster", clusters)
  m <- side(rhs, model, "share", "cluster", clusters)
  k <- length(p$beta)
  G <- length(clusters)
  bread <- matrix(0, 2 * k, 2 * k)
  bread[1:k, 1:k] <- solve(p$info)
  bread[(k + 1):(2 * k), (k + 1):(2 * k)] <- solve(m$info)
  s <- cbind(p$sums, m$sums)
  s[is.na(s)] <- 0
  V <- bread %*% (crossprod(s) * G / (G - 1)) %*% bread
  rows <- lapply(effects, function(e) {
    L <- e$L
    d <- sum(L * p$beta) - sum(L * m$beta)
    g <- c(L, -L)
    se <- sqrt(drop(t(g) %*% V %*% g))
    df <- G - 1
    list(model = name, effect = e$name, people_estimate = sum(L * p$beta),
         model_estimate = sum(L * m$beta), estimate = d, se = se, df = df,
         p_value = 2 * pt(abs(d) / se, df, lower.tail = FALSE),
         p_equivalence = max(pt((d + bound) / se, df, lower.tail = FALSE),
                             pt((d - bound) / se, df)),
         n_clusters = G)
  })
  rows
}

# --- Exp 1, condition model (all conditions, he/she trials) ---
p1 <- e1[e1$Other == 0, ]
p1$Condition <- coded(p1$Condition, c("first", "full", "last"), fixed3)
m1 <- s1
m1$cluster <- m1$name_unit
m1$Condition <- coded(m1$Condition, c("first", "full", "last"), fixed3)
g3 <- data.frame(Condition = coded(c("first", "full", "last"), c("first", "full", "last"), fixed3))
cond1 <- joint("m_cond", "Condition", p1, m1, list(
  list(name = "last minus first and full", L = contrast(g3, c(-0.5, -0.5, 1), "Condition")),
  list(name = "full minus first", L = contrast(g3, c(-1, 1, 0), "Condition"))))

# --- Exp 1, condition x rating model (first and full names, he/she trials) ---
rhs <- "Condition * GenderRatingCentered"
p1r <- e1[e1$Other == 0 & e1$Condition != "last", ]
p1r$Condition <- coded(p1r$Condition, c("first", "full"), fixed2)
m1r <- s1[s1$Condition != "last", ]
m1r$cluster <- m1r$first_name
m1r$Condition <- coded(m1r$Condition, c("first", "full"), fixed2)
grid2 <- function(r) data.frame(Condition = coded(c("first", "full"), c("first", "full"), fixed2),
                                GenderRatingCentered = r)
slope2 <- contrast(grid2(1), c(1, 1), rhs) - contrast(grid2(0), c(1, 1), rhs)
rating1 <- joint("m_nameGender", rhs, p1r, m1r, list(
  list(name = "full minus first", L = contrast(grid2(0), c(-1, 1), rhs)),
  list(name = "rating slope (per point)", L = slope2 / 2),
  list(name = "full minus first × rating slope",
       L = contrast(grid2(1), c(-1, 1), rhs) - contrast(grid2(0), c(-1, 1), rhs))))

# --- Exp 3, condition x rating model (he/she trials), centred Helmert ---
p3 <- e3[e3$Other == 0, ]
p3$Condition <- coded(p3$Condition, c("first", "full", "last"), helmert3)
m3 <- s3
m3$cluster <- m3$first_name
m3$Condition <- coded(m3$Condition, c("first", "full", "last"), helmert3)
grid3 <- function(r) data.frame(Condition = coded(c("first", "full", "last"),
                                                  c("first", "full", "last"), helmert3),
                                GenderRatingCentered = r)
per_point <- function(w) contrast(grid3(1), w, rhs) - contrast(grid3(0), w, rhs)
rating3 <- joint("m_noOther", rhs, p3, m3, list(
  list(name = "last minus first and full", L = contrast(grid3(0), c(-0.5, -0.5, 1), rhs)),
  list(name = "full minus first", L = contrast(grid3(0), c(-1, 1, 0), rhs)),
  list(name = "rating slope (per point)", L = per_point(condition_share3)),
  list(name = "last minus first and full × rating slope", L = per_point(c(-0.5, -0.5, 1))),
  list(name = "full minus first × rating slope", L = per_point(c(-1, 1, 0)))))

out <- list(exp1 = c(cond1, rating1), exp3 = rating3, equivalence_bound = bound,
            versions = list(R = R.version.string))
write_json(out, file.path(dir, "name_gender_side_difference_refs.json"), digits = NA,
           auto_unbox = TRUE, pretty = TRUE)
cat("wrote", file.path(dir, "name_gender_side_difference_refs.json"), "\n")
