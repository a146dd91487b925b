namespace AvatarBridge.Core.Zmtp
{
    /// <summary>The client socket types the bridge needs: DEALER toward its ROUTER, SUB toward its PUB.</summary>
    public enum ZmtpSocketType
    {
        Dealer,
        Sub,
    }
}
