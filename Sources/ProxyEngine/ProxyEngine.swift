// ProxyEngine: see DESIGN.md
