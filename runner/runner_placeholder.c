/* Placeholder until the runner library lands. */
typedef int runner_placeholder_t;
