/* Placeholder until the service lands. */
typedef int serve_placeholder_t;
