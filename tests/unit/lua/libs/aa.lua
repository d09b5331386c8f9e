return { x = 41 }
