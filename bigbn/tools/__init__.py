"""The paper's simulation study and the tools around runs: random networks and data
(`simulate`), ROC curves against a true network (`roc`), the study itself (`study`)."""
