"""OpenTelemetry traces (OTLP/HTTP, protobuf or JSON) of a RAG application as the outputs of a run: decoding
(``decode``), the OpenInference and GenAI semantic conventions (``mapping``), locating and writing
(``service``)."""
