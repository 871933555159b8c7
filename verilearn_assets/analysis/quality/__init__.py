"""Question quality: the readability score of a wording and the quality-class report over the
bundled catalog (`python -m verilearn_assets.analysis.quality.report`)."""
