/* Placeholder until the allowlist library lands. */
typedef int allowlist_placeholder_t;
