# Reference fit for studies.cognitive_bias: the QA GLMM fitted with lme4 directly,
# independently of gbstats' formula and factor handling.
#
#   Rscript tests/reference/cognitive_bias_glmm_reference.R rows.csv coefs.csv factor|numeric
#
# Run by tests/studies/test_cognitive_bias.py (test_lme4_glmm_matches_a_direct_r_fit), which
# writes rows.csv and compares gbstats' fit with coefs.csv.
#
# rows.csv: correct (0/1), stereotype (anti/pro), alpha (0.25/0.5/0.75),
# participant, sentence. The factor coding is spelled out here as the study
# documents it: stereotype reference "anti"; alpha as a factor with reference
# "0.75" (least time pressure), then "0.5", "0.25". Writes term, estimate, se.
suppressMessages(library(lme4))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1], colClasses = c(participant = "character", sentence = "character"))
d$stereotype <- factor(d$stereotype, levels = c("anti", "pro"))
if (args[3] == "factor") {
  d$alpha <- factor(format(d$alpha, drop0trailing = TRUE, trim = TRUE),
                    levels = c("0.75", "0.5", "0.25"))
}
m <- glmer(correct ~ stereotype * alpha + (1 | participant) + (1 | sentence),
           data = d, family = binomial)
s <- summary(m)$coefficients
write.csv(data.frame(term = rownames(s), estimate = s[, 1], se = s[, 2]), args[2],
          row.names = FALSE)
