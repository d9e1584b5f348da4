"""Local scores behind one interface (`base.Score`): BDeu and K2, BGe, scores read from
.jkl files, interventional data, the structure prior, and the offsets that keep huge scores exact."""
