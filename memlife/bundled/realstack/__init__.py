"""The realstack target (`memlife target serve realstack`, extra `memlife[realstack]`)."""
