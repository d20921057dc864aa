// deskd console
