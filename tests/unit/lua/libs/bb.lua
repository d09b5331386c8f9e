-- loaded after aa.lua (name order), so it can use it
return { y = aa.x + 1 }
