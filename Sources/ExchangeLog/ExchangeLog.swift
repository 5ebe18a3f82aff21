// ExchangeLog: see DESIGN.md
