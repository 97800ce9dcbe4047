"""The environments of the suite; one module (or small folder) each."""
