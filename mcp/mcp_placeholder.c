/* Placeholder until the MCP server lands. */
typedef int mcp_placeholder_t;
