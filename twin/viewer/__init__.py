"""``rob-twin view``: the interactive viewer session, its keys and its status line."""
