"""What a model is (`base`, `synthesis`, `engine_base`), its families (`supertonic/`,
`piper/`) and how one is opened (`resolve`, `family`)."""
